"""The peers that need torch, set up as their authors recommend: Optuna's `GPSampler` (its
defaults: a Matern 5/2 GP with automatic relevance determination and log-EI, 10 random startup
trials). It comes from the `peers-torch` extra, which `make test` does not install (torch's
wheels pull gigabytes of CUDA libraries):

    pip install -e ".[peers-torch]"

It deploys its best single reading, as Optuna's best_trial does. HEBO (and OpenBox) pin NumPy
below 1.25 and scikit-learn below 1.4, which hone's environment cannot hold: they would run out
of process from an environment of their own, as PromiseTune does (promisetune.py)."""

from __future__ import annotations

import importlib.util

import optuna

from hone.optimizers.tpe import OptunaOptimizer

MISSING = "needs torch: pip install -e '.[peers-torch]'"


def missing(tuner: str) -> str | None:
    """Why a torch peer cannot run here, or None."""
    needs = {"optuna-gp": ("torch",)}.get(tuner, ())
    absent = [m for m in needs if importlib.util.find_spec(m) is None]
    return f"{tuner} {MISSING} ({', '.join(absent)} absent)" if absent else None


class OptunaGp(OptunaOptimizer):
    """Optuna's GPSampler with its defaults."""

    name = "optuna-gp-peer"

    def sampler(self) -> optuna.samplers.BaseSampler:
        return optuna.samplers.GPSampler(seed=self.seed)
