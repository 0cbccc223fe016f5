"""The engine table: every optimiser module's names are in it, and checking a project's engine
or building a light optimiser imports no other optimiser (nor SciPy and scikit-learn)."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import hone.optimizers as package
from hone.optimizers.base import _REGISTRY, ENGINES

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


def test_a_project_and_a_random_engine_load_no_model() -> None:
    code = (
        "import sys\n"
        "from hone.optimizers import make_optimizer\n"
        "from hone.project import load_project\n"
        f"project = load_project({str(ROOT / 'examples' / 'compress')!r})\n"
        "make_optimizer('random', project.space())\n"
        "heavy = {'scipy.stats', 'sklearn', 'hone.optimizers.auto'} & sys.modules.keys()\n"
        "print(sorted(m for m in sys.modules if m.startswith('hone.optimizers.')), sorted(heavy))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().endswith("[]"), done.stdout
    assert "hone.optimizers.random" in done.stdout and "hone.optimizers.grid" not in done.stdout
