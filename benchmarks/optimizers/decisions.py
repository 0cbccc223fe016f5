"""How much of auto's slowness to settle is its decision, not its search?

    python -m benchmarks.optimizers.decisions --seeds 10
    python -m benchmarks.optimizers.decisions --tasks gcc-flags,nginx --set auto.CAUTION=0.0

Runs `auto` on the default suite's tasks (budget 50, as `benchmarks.tuners` does) and after each
evaluation scores two configurations by their truth: the one `auto` recommends, and the best
configuration measured so far (what a perfect decision among the same trials would deploy).
Prints the median evaluations until each stays within 2 % of the optimum, and the share of
evaluations 11-50 at which the recommendation is within 2 %. Where the second column is far
below the first, better decisions under noise (what to deploy, what to re-measure) would pay;
where both are `-`, only better search would."""

from __future__ import annotations

import argparse
import multiprocessing
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the tuner harness: one BLAS thread per job

import numpy as np

from benchmarks.optimizers.variants import TASKS_DIR, apply
from benchmarks.tuners.harness import RunResult, run
from benchmarks.tuners.scoring import evals_to_measure, evals_to_stay
from benchmarks.tuners.tasks import Task, default_tasks

BUDGET = 50
_TASKS: list[Task] = []  # shared with forked workers (COCO problems do not pickle)


def _job(item: tuple[int, int]) -> RunResult:
    index, seed = item
    return run(_TASKS[index], "auto", seed, BUDGET)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--tasks", default="", help="comma-separated task names (default: all)")
    parser.add_argument("--set", action="append", default=[], help="module.NAME=literal")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    for setting in args.set:
        apply(setting)
    names = set(filter(None, args.tasks.split(",")))
    _TASKS[:] = [t for t in default_tasks(TASKS_DIR, quick=False) if not names or t.name in names]
    work = [(i, seed) for i in range(len(_TASKS)) for seed in range(args.seeds)]
    with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
        results = pool.map(_job, work, chunksize=1)
    print(f"auto {' '.join(args.set) or '(as committed)'}, {args.seeds} seeds, budget {BUDGET}")
    print("| task | evals to stay within 2 %: recommended | best measured | within 2 % at 11-50 |")
    print("|---|---|---|---|")
    for index, task in enumerate(_TASKS):
        runs = [r for (i, _), r in zip(work, results, strict=True) if i == index]
        cells = []
        for evals in (evals_to_stay, evals_to_measure):
            settled = float(np.median([evals(r, 0.02) for r in runs]))
            cells.append(f"{settled:g}" if np.isfinite(settled) else "-")
        share = float(np.mean([np.array(r.gaps[10:]) <= 0.02 for r in runs]))
        print(f"| {task.name} | {cells[0]} | {cells[1]} | {share:.2f} |")


if __name__ == "__main__":
    main()
