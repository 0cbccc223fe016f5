"""The peers that need torch, set up as their authors recommend: Optuna's `GPSampler` (its
defaults: a Matern 5/2 GP with automatic relevance and log-EI, 10 random startup trials) and
HEBO (Cowen-Rivers et al., JAIR 2022; its defaults: input and output warping, a multi-objective
acquisition ensemble solved by NSGA-II). They come from the `peers-torch` extra, which
`make test` does not install (torch's wheels pull gigabytes of CUDA libraries):

    pip install -e ".[peers-torch]"

Both deploy their best single reading, as Optuna's best_trial and HEBO's best_x do."""

from __future__ import annotations

import importlib.util

import numpy as np
import optuna

from hone.optimizers import Observation
from hone.optimizers.tpe import OptunaOptimizer
from hone.space import Boolean, Categorical, Config, FloatRange, SearchSpace

MISSING = "needs torch: pip install -e '.[peers-torch]'"


def missing(tuner: str) -> str | None:
    """Why a torch peer cannot run here, or None."""
    needs = {"optuna-gp": ("torch",), "hebo": ("torch", "hebo")}.get(tuner, ())
    absent = [m for m in needs if importlib.util.find_spec(m) is None]
    return f"{tuner} {MISSING} ({', '.join(absent)} absent)" if absent else None


class OptunaGp(OptunaOptimizer):
    """Optuna's GPSampler with its defaults."""

    name = "optuna-gp-peer"

    def sampler(self) -> optuna.samplers.BaseSampler:
        return optuna.samplers.GPSampler(seed=self.seed)


class Hebo:
    """HEBO through its suggest / observe interface. Listed values are given as an integer
    index (their order kept), categories as categories, continuous ranges as numbers; a failed
    trial is observed as the worst value seen (HEBO has no failure model)."""

    def __init__(self, space: SearchSpace, seed: int, budget: int) -> None:
        from hebo.design_space.design_space import DesignSpace
        from hebo.optimizers.hebo import HEBO

        self.space = space
        self.listed = {n: d.values() for n, d in space if d.values() is not None}
        params = []
        for name, domain in space:
            if isinstance(domain, Categorical | Boolean):
                params.append(
                    {"name": name, "type": "cat", "categories": list(map(str, domain.values()))}
                )
            elif name in self.listed:
                params.append(
                    {"name": name, "type": "int", "lb": 0, "ub": len(self.listed[name]) - 1}
                )
            else:
                assert isinstance(domain, FloatRange)
                params.append({"name": name, "type": "num", "lb": domain.low, "ub": domain.high})
        np.random.seed(seed)  # HEBO draws from NumPy's and torch's global generators
        import torch

        torch.manual_seed(seed)
        self.hebo = HEBO(DesignSpace().parse(params), scramble_seed=seed)
        self.history: list[Observation] = []
        self._rows: dict[tuple, object] = {}

    def ask(self) -> Config:
        row = self.hebo.suggest(n_suggestions=1)
        config = {}
        for name, domain in self.space:
            value = row[name].iloc[0]
            if isinstance(domain, Categorical | Boolean):
                config[name] = {str(v): v for v in domain.values()}[str(value)]
            elif name in self.listed:
                config[name] = self.listed[name][int(value)]
            else:
                config[name] = float(value)
        self._rows[self.space.key(config)] = row
        return config

    def tell(self, config: Config, value: float | None) -> None:
        self.history.append(Observation(config, value))
        row = self._rows.pop(self.space.key(config), None)
        if row is None:  # told without being asked (the baseline): HEBO learns it too
            row = self._frame(config)
        seen = [o.value for o in self.history if o.value is not None]
        observed = value if value is not None else (max(seen) if seen else 0.0)
        self.hebo.observe(row, np.array([[observed]]))

    def _frame(self, config: Config):
        import pandas as pd

        values = {}
        for name, domain in self.space:
            value = config[name]
            if isinstance(domain, Categorical | Boolean):
                values[name] = [str(value)]
            elif name in self.listed:
                values[name] = [self.listed[name].index(value)]
            else:
                values[name] = [float(value)]
        return pd.DataFrame(values)

    def recommend(self) -> Config | None:
        done = [o for o in self.history if o.value is not None]
        return min(done, key=lambda o: o.value).config if done else None
