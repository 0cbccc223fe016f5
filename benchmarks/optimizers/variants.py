"""auto with some of its constants changed, on the tuner suite's tasks: does a change help?

    python -m benchmarks.optimizers.variants --seeds 15
    python -m benchmarks.optimizers.variants --seeds 15 --set auto.REMEASURE=2.0
    python -m benchmarks.optimizers.variants --only knobs --set auto.CLIMB_STEPS=8
    python -m benchmarks.optimizers.variants --set "additive_gp.BOUNDS=[(-4, 3), (-5, 2),
        (-3, 1.6), (-9, 0.5)]"          # (one argument)

Runs `auto` alone on the default suite's 13 tasks (`benchmarks.tuners`, budget 50) and prints
each task's normalised regret averaged over seeds and over evaluations 1-10, 11-30 and 31-50,
then the mean over tasks, and the median evaluations until the deployed configuration stays
within 2 % of the optimum (`-`: the median seed does not). Means over windows and seeds, not
medians at one budget: the median of 5 seeds at one budget moved by 0.3 between changes that
did nothing."""

from __future__ import annotations

import argparse
import ast
import importlib
import multiprocessing
import os
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the tuner harness: one BLAS thread per job

import numpy as np

from benchmarks.tuners.harness import RunResult, run
from benchmarks.tuners.scoring import evals_to_stay
from benchmarks.tuners.tasks import Task, default_tasks

TASKS_DIR = Path(__file__).resolve().parents[1] / "tuners" / "tasks"
WINDOWS = ((0, 10), (10, 30), (30, 50))
_TASKS: list[Task] = []  # shared with forked workers (COCO problems do not pickle)


def apply(setting: str) -> None:
    """`module.NAME=literal`: set a constant of hone.optimizers.<module> before the runs."""
    target, _, literal = setting.partition("=")
    module, _, name = target.rpartition(".")
    holder = importlib.import_module(f"hone.optimizers.{module}")
    if not hasattr(holder, name):
        raise SystemExit(f"hone.optimizers.{module} has no {name}")
    setattr(holder, name, ast.literal_eval(literal))


def _job(item: tuple[int, int]) -> RunResult:
    index, seed = item
    return run(_TASKS[index], "auto", seed, 50)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=15)
    parser.add_argument("--set", action="append", default=[], help="module.NAME=literal")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument(
        "--only", action="append", default=[], help="tasks whose name contains this (repeatable)"
    )
    args = parser.parse_args()
    for setting in args.set:
        apply(setting)
    tasks = default_tasks(TASKS_DIR, quick=False)
    _TASKS[:] = [t for t in tasks if not args.only or any(o in t.name for o in args.only)]
    work = [(i, seed) for i in range(len(_TASKS)) for seed in range(args.seeds)]
    started = time.monotonic()
    with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
        results = pool.map(_job, work, chunksize=1)
    print(f"auto {' '.join(args.set) or '(as committed)'}, {args.seeds} seeds, budget 50")
    print("| task | regret, evals 1-10 | 11-30 | 31-50 | evals to stay within 2 % |")
    print("|---|---|---|---|---|")
    rows = []
    for index, task in enumerate(_TASKS):
        pairs = zip(work, results, strict=True)
        runs = [r for (i, _), r in pairs if i == index]
        regrets = np.array([r.regrets for r in runs])
        row = [float(regrets[:, a:b].mean()) for a, b in WINDOWS]
        rows.append(row)
        settled = float(np.median([evals_to_stay(r, 0.02) for r in runs]))
        stay = f"{settled:g}" if np.isfinite(settled) else "-"
        print(f"| {task.name} | " + " | ".join(f"{v:.3f}" for v in row) + f" | {stay} |")
    mean = np.mean(rows, axis=0)
    print("| mean | " + " | ".join(f"{v:.3f}" for v in mean) + " |")
    print(f"({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
