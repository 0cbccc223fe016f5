"""The engine table: every optimiser module's names are in it, and checking a project's engine,
building a light optimiser and confirming a gain import no other optimiser (nor scipy.stats
and scikit-learn, a second or more of every such study); `auto` imports scikit-learn only
once a trial failed."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

from scipy import stats

import hone.optimizers as package
from hone.optimizers.base import _REGISTRY, ENGINES
from hone.tune.stats import _t_quantile

ROOT = Path(__file__).resolve().parents[2]


def test_the_table_names_every_registered_engine_and_its_module() -> None:
    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{module.name}")
    registered = {
        name: cls.__module__.rsplit(".", 1)[1]
        for name, cls in _REGISTRY.items()
        if cls.__module__.startswith(f"{package.__name__}.")
    }
    assert registered == ENGINES


def test_a_random_engine_study_loads_no_model_and_the_same_quantiles() -> None:
    code = (
        "import sys\n"
        "from hone.optimizers import make_optimizer\n"
        "from hone.project import load_project\n"
        "from hone.tune.stats import paired_gain\n"
        f"project = load_project({str(ROOT / 'examples' / 'compress')!r})\n"
        "make_optimizer('random', project.space())\n"
        "print(paired_gain([1.1, 1.3, 1.2], [1.0, 1.1, 1.0]).half_width)\n"
        "heavy = {'scipy.stats', 'sklearn', 'hone.optimizers.auto'} & sys.modules.keys()\n"
        "print(sorted(m for m in sys.modules if m.startswith('hone.optimizers.')), sorted(heavy))\n"
        # auto without a failed trial: its model of failures (scikit-learn) is never fitted
        "auto = make_optimizer('auto', project.space(), seed=1)\n"
        "for value in (3.0, 2.0, 1.0, 2.5, 1.5, 0.5, 2.2, 1.1, 0.7):\n"
        "    auto.tell(auto.ask(), value)\n"
        "print(auto.recommend() is not None, 'sklearn' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    half_width, modules, auto = done.stdout.splitlines()
    assert float(half_width) > 0 and modules.endswith("[]"), done.stdout
    assert "hone.optimizers.random" in modules and "hone.optimizers.grid" not in modules
    assert auto == "True False"
    for q in (0.8, 0.975, 0.99975):  # the t-quantiles of the confirmation, as scipy.stats gives
        for df in (1, 2, 9, 40):
            assert _t_quantile(q, df) == float(stats.t.ppf(q, df))
