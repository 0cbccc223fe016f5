"""The tuner benchmark: every tuner on every task with several seeds, side by side.

    python -m benchmarks.tuners                 # default suite: 13 tasks, 5 seeds, budget 50
    python -m benchmarks.tuners --quick         # 6 tasks, budget 30, no scikit-optimize
    python -m benchmarks.tuners --task path/to/NAME.yaml --tuners auto,optuna-tpe --seeds 10

Writes docs/tuners.md (tables) and docs/tuners/*.png (median regret curves)."""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
import warnings
from pathlib import Path

# Parallel jobs on a small shared machine: one BLAS thread per process, for every tuner alike
# (threads of tiny matrix products only contend; set before NumPy loads).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from scipy import stats

from benchmarks.tuners.about import ABOUT
from benchmarks.tuners.harness import TUNERS, RunResult, run
from benchmarks.tuners.tasks import TabularTask, Task, default_tasks

ROOT = Path(__file__).resolve().parents[2]
TASKS = Path(__file__).resolve().parent / "tasks"


def evals_to(result: RunResult, within: float) -> float:
    for index, gap in enumerate(result.gaps, start=1):
        if gap <= within:
            return index
    return float("inf")


def holm(pvalues: dict[str, float]) -> dict[str, float]:
    order = sorted(pvalues, key=pvalues.get)
    adjusted, running = {}, 0.0
    for rank, name in enumerate(order):
        running = max(running, min(1.0, (len(order) - rank) * pvalues[name]))
        adjusted[name] = running
    return adjusted


def median_text(values: list[float]) -> str:
    value = float(np.median(values))
    return "-" if not np.isfinite(value) else f"{value:g}"


# hone's own A-Tune-style engines (gp-atune-bayes, gbrt-atune) run with --tuners; by default
# A-Tune is represented by scikit-optimize set up as A-Tune sets it up.
DEFAULT_TUNERS = [t for t in TUNERS if t not in ("gp-atune-bayes", "gbrt-atune")]
_TASKS: list[Task] = []  # shared with forked workers (COCO problems do not pickle)


# scikit-optimize spends about 0.4 s per suggestion at 50 trials (its GP refits on every tell
# and scores 10,000 points per acquisition): it runs on fewer seeds to keep the suite in time.
SLOW_TUNERS = ("skopt-gp-atune", "skopt-gbrt-atune")


def _job(item: tuple[int, str, int, int]) -> tuple[str, str, list[RunResult], float]:
    index, tuner, seeds, budget = item
    warnings.filterwarnings("ignore", message="Loky-backed parallel loops")
    task = _TASKS[index]
    started = time.monotonic()
    runs = [run(task, tuner, seed, budget) for seed in range(seeds)]
    return task.name, tuner, runs, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--task", action="append", type=Path, help="a tabular task YAML")
    parser.add_argument("--tuners", default=",".join(DEFAULT_TUNERS), help=", ".join(TUNERS))
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument(
        "--slow-seeds", type=int, default=1, help=f"seeds for {', '.join(SLOW_TUNERS)}"
    )
    parser.add_argument("--budget", type=int, default=None)
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "tuners.md")
    parser.add_argument("--jobs", type=int, default=2, help="tuner runs in parallel processes")
    args = parser.parse_args()
    seeds = args.seeds or 5
    budget = args.budget or (30 if args.quick else 50)
    tuners = args.tuners.split(",")
    if args.quick and args.tuners == parser.get_default("tuners"):
        # scikit-optimize spends seconds per suggestion here: it runs in the default suite only
        tuners = [t for t in tuners if not t.startswith("skopt-")]
    tasks: list[Task] = (
        [TabularTask(p) for p in args.task] if args.task else default_tasks(TASKS, args.quick)
    )
    unknown = [t for t in tuners if t not in TUNERS]
    if unknown:
        parser.error(f"unknown tuners {unknown}; known: {', '.join(TUNERS)}")
    started = time.monotonic()
    _TASKS[:] = tasks
    work = [
        (i, tuner, min(seeds, args.slow_seeds) if tuner in SLOW_TUNERS else seeds, budget)
        for i in range(len(tasks))
        for tuner in tuners
    ]
    work.sort(key=lambda item: item[1] not in (*SLOW_TUNERS, "smac-hpo"))  # long jobs first
    results: dict[tuple[str, str], list[RunResult]] = {}
    with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
        for name, tuner, runs, seconds in pool.imap_unordered(_job, work):
            results[name, tuner] = runs
            print(f"{name:28s} {tuner:16s} {seconds:6.1f} s", flush=True)
    if len(results) != len(work):  # a StopIteration from a tuner ends a pool's loop early
        sys.exit(f"only {len(results)} of {len(work)} runs came back")
    elapsed = time.monotonic() - started
    write_report(args, tasks, tuners, results, seeds, budget, elapsed)


def write_report(args, tasks, tuners, results, seeds, budget, elapsed) -> None:
    lines = [
        "# Tuner benchmark",
        "",
        f"Command: `{' '.join(['python -m benchmarks.tuners', *sys.argv[1:]])}` "
        f"({len(tasks)} tasks x {len(tuners)} tuners x {seeds} seeds"
        + (
            f" ({min(seeds, args.slow_seeds)} for {', '.join(slow)})"
            if (slow := [t for t in tuners if t in SLOW_TUNERS])
            else ""
        )
        + f", budget {budget}; "
        f"{elapsed / 60:.1f} min on this 2-core machine, {args.jobs} parallel jobs, so optimiser "
        "times include contention). Scores are the truth of the "
        "configuration each tuner would deploy after each evaluation.",
        "",
        ABOUT,
    ]
    checkpoints = [b for b in (10, 20, 30, 50) if b <= budget]
    ranks: dict[int, list[dict[str, float]]] = {b: [] for b in checkpoints}
    ratio_2 = []
    for task in tasks:
        lines += [
            f"## {task.name}",
            "",
            "| tuner | evals to 1 % | to 2 % | to 5 % | "
            + " | ".join(f"regret@{b}" for b in checkpoints)
            + " | AUC | final gap | ms per ask | vs auto (Holm p) |",
            "|---" * (8 + len(checkpoints)) + "|",
        ]
        final = {t: [r.regrets[-1] for r in results[task.name, t]] for t in tuners}
        pvalues = {}
        if "auto" in tuners:
            for tuner in tuners:
                if tuner != "auto":
                    common = min(len(final["auto"]), len(final[tuner]))  # same seeds
                    diff = np.array(final["auto"][:common]) - np.array(final[tuner][:common])
                    pvalues[tuner] = 1.0 if not np.any(diff) else float(stats.wilcoxon(diff).pvalue)
        adjusted = holm(pvalues) if pvalues else {}
        for b in checkpoints:
            medians = {
                t: float(np.median([r.regrets[b - 1] for r in results[task.name, t]]))
                for t in tuners
            }
            order = stats.rankdata([medians[t] for t in tuners])
            ranks[b].append(dict(zip(tuners, order, strict=True)))
        to2 = {
            t: float(np.median([evals_to(r, 0.02) for r in results[task.name, t]])) for t in tuners
        }
        peers = [v for t, v in to2.items() if t != "auto"]
        if "auto" in tuners and peers and np.isfinite(min(peers)):
            ratio_2.append(to2["auto"] / min(peers))
        for tuner in tuners:
            runs = results[task.name, tuner]
            cells = [median_text([evals_to(r, w) for r in runs]) for w in (0.01, 0.02, 0.05)]
            cells += [f"{np.median([r.regrets[b - 1] for r in runs]):.3f}" for b in checkpoints]
            cells.append(f"{np.mean([np.mean(r.regrets) for r in runs]):.3f}")
            cells.append(f"{100 * np.median([r.gaps[-1] for r in runs]):.1f} %")
            cells.append(f"{1000 * np.median([s for r in runs for s in r.ask_seconds]):.1f}")
            cells.append(f"{adjusted[tuner]:.3f}" if tuner in adjusted else "")
            lines.append(f"| {tuner} | " + " | ".join(cells) + " |")
        lines.append("")
        plot(task.name, tuners, results, budget, args.output.parent / "tuners")
        lines += [f"![{task.name}](tuners/{task.name.replace('%', 'pct')}.png)", ""]
    lines += [
        "## Overall",
        "",
        "Average rank of the median regret across tasks (1 is best):",
        "",
        "| tuner | " + " | ".join(f"budget {b}" for b in checkpoints) + " |",
        "|---" * (1 + len(checkpoints)) + "|",
    ]
    for tuner in tuners:
        cells = [f"{np.mean([r[tuner] for r in ranks[b]]):.2f}" for b in checkpoints]
        lines.append(f"| {tuner} | " + " | ".join(cells) + " |")
    if len(tasks) >= 2 and len(tuners) >= 3:
        friedman = [
            stats.friedmanchisquare(*[[r[t] for r in ranks[b]] for t in tuners]).pvalue
            for b in checkpoints
        ]
        lines.append("| Friedman p | " + " | ".join(f"{p:.3g}" for p in friedman) + " |")
    if ratio_2:
        finite = [r for r in ratio_2 if np.isfinite(r)]
        lines += [
            "",
            "Median over tasks of (evaluations for auto to come within 2 %) / "
            f"(the same for the best peer): {np.median(ratio_2):.2f} "
            f"({len(finite)} of {len(ratio_2)} tasks finite; target <= 0.5).",
        ]
    if "auto" in tuners and len(tuners) > 1:
        lines.append("")
        for b in [b for b in (20, 50) if b in checkpoints]:
            average = {t: float(np.mean([r[t] for r in ranks[b]])) for t in tuners}
            peer = min((t for t in tuners if t != "auto"), key=average.get)
            met = "met" if average["auto"] < average[peer] else "not met"
            lines.append(
                f"Target, best average rank at budget {b}: auto {average['auto']:.2f}, best "
                f"peer {peer} {average[peer]:.2f} ({met})."
            )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.output}")


def plot(name: str, tuners: list[str], results, budget: int, out: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    figure, axes = plt.subplots(figsize=(7, 4))
    styles = ["-", "--", "-.", ":"]
    for index, tuner in enumerate(tuners):
        curve = np.median([r.regrets for r in results[name, tuner]], axis=0)
        axes.plot(
            range(1, budget + 1),
            curve,
            styles[index % 4],
            label=tuner,
            marker="o" if tuner == "auto" else None,
            markevery=5,
        )
    axes.set(xlabel="evaluations", ylabel="normalised regret (median)", title=name)
    axes.legend(fontsize=8)
    out.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(out / f"{name.replace('%', 'pct')}.png", dpi=90)  # no % in a link
    plt.close(figure)


if __name__ == "__main__":
    main()
