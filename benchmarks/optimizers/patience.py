"""Would ending a search early, once its recommendation stops changing, save evaluations?

    python -m benchmarks.optimizers.patience --seeds 10
    python -m benchmarks.optimizers.patience --seeds 10 --tuner optuna-tpe

Runs a tuner on the development tasks of the tuner suite (budget 100, as `benchmarks.tuners
--set development` does) and records the configuration it would deploy after each evaluation.
For each patience N it then ends every run at the first evaluation after which the deployed
configuration has stayed the same for N evaluations, and compares the mean normalised regret
at that point with the regret of a fixed budget spending the same mean number of evaluations:
a stopping rule is worth having only where it beats simply asking for fewer trials."""

from __future__ import annotations

import argparse
import multiprocessing
import os
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the tuner harness: one BLAS thread per job

import numpy as np

from benchmarks.optimizers.variants import TASKS_DIR
from benchmarks.tuners.harness import TUNERS, run
from benchmarks.tuners.suite import suite_tasks
from benchmarks.tuners.tasks import Task
from hone.space import Config, SearchSpace

BUDGET = 100
PATIENCES = (5, 10, 15, 20, 30)
_TASKS: list[Task] = []  # shared with forked workers (COCO problems do not pickle)


class Watched:
    """A tuner whose every recommendation is noted by its key (the harness asks for one after
    each evaluation)."""

    def __init__(self, inner: Any, space: SearchSpace) -> None:
        self.inner, self.space = inner, space
        self.keys: list[Any] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def recommend(self) -> Config | None:
        config = self.inner.recommend()
        self.keys.append(None if config is None else self.space.key(config))
        return config


def _job(item: tuple[int, int, str]) -> tuple[list[Any], list[float]]:
    index, seed, tuner = item
    watched: list[Watched] = []

    def make(space: SearchSpace, seed: int, budget: int) -> Watched:
        watched.append(Watched(TUNERS[tuner](space, seed, budget), space))
        return watched[-1]

    TUNERS["watched"] = make
    result = run(_TASKS[index], "watched", seed, BUDGET)
    return watched[0].keys, result.regrets


def stop_at(keys: list[Any], patience: int) -> int:
    """The number of evaluations a run with this patience spends."""
    stale = 0
    for index in range(1, len(keys)):
        stale = stale + 1 if keys[index] == keys[index - 1] else 0
        if stale >= patience:
            return index + 1
    return len(keys)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--tuner", default="auto")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    _TASKS[:] = suite_tasks(TASKS_DIR, quick=False, full=False, name="development")
    work = [(i, seed, args.tuner) for i in range(len(_TASKS)) for seed in range(args.seeds)]
    with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
        runs = pool.map(_job, work, chunksize=1)
    regrets = np.array([r for _, r in runs])
    print(f"{args.tuner}, {len(_TASKS)} development tasks, {args.seeds} seeds, budget {BUDGET}")
    print(
        "| patience | evaluations spent (mean) | runs stopped | regret at the stop |"
        " fixed budget of that many | regret at 100 |"
    )
    print("|---|---|---|---|---|---|")
    for patience in PATIENCES:
        spent = np.array([stop_at(keys, patience) for keys, _ in runs])
        at_stop = regrets[np.arange(len(runs)), spent - 1].mean()
        fixed = round(spent.mean())
        print(
            f"| {patience} | {spent.mean():.1f} | {np.mean(spent < BUDGET):.0%} | {at_stop:.3f} |"
            f" {regrets[:, fixed - 1].mean():.3f} at {fixed} | {regrets[:, -1].mean():.3f} |"
        )


if __name__ == "__main__":
    main()
