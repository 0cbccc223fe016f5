"""Does `auto` lose quality when its proposals are made beside trials still running on other
workers? Evaluations to stay within 5 % of the optimum with 1 (sequential), 2 and 4 workers, on
the tabular tasks, through the tuner harness (`run(..., workers=n)`: each proposal sees the
previous n - 1 as pending, as `hone worker` passes them).

    python -m benchmarks.tuners.workers [--seeds 5] [--budget 40] [--workers 1 2 4]

Target: within 5 % of sequential (the median over tasks of the median over seeds)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from benchmarks.tuners.harness import run
from benchmarks.tuners.scoring import evals_to_stay
from benchmarks.tuners.tasks import SyntheticTask, TabularTask

TASKS = Path(__file__).parent / "tasks"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--budget", type=int, default=40)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args()
    tasks = [TabularTask(TASKS / f"{name}.yaml") for name in ("memcached", "nginx", "gcc-flags")]
    tasks.append(SyntheticTask("synthetic-4-knobs-10%", 4, 0.10, seed=3))
    print(f"auto, budget {args.budget}, seeds 0-{args.seeds - 1}: median evaluations to stay")
    print("within 5 % of the optimum (inf: not there at the end), and the final gap (mean)")
    print("| task | " + " | ".join(f"{w} worker(s)" for w in args.workers) + " |")
    print("|---|" + "---|" * len(args.workers))
    for task in tasks:
        cells = []
        for workers in args.workers:
            runs = [
                run(task, "auto", seed, args.budget, workers=workers) for seed in range(args.seeds)
            ]
            evals = float(np.median([evals_to_stay(r, 0.05) for r in runs]))
            finals = [r.gaps[-1] for r in runs]
            final = float(np.mean(finals)) if all(map(math.isfinite, finals)) else math.inf
            cells.append(f"{evals:g} evals, gap {final:.1%}")
        print(f"| {task.name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
