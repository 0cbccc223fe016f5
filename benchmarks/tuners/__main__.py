"""The tuner benchmark: every tuner on every task with several seeds, side by side.

    python -m benchmarks.tuners                 # default suite: 13 tasks, 5 seeds, budget 50
    python -m benchmarks.tuners --quick         # 6 tasks, budget 30, no scikit-optimize
    python -m benchmarks.tuners --task path/to/NAME.yaml --tuners auto,optuna-tpe --seeds 10
    python -m benchmarks.tuners --save-runs runs.pkl    # later: --from-runs runs.pkl (no rerun)
    python -m benchmarks.tuners --tuners auto --peers-from runs.pkl  # rerun auto, peers as saved

Writes docs/tuners.md (tables) and docs/tuners/*.png (median regret curves)."""

from __future__ import annotations

import argparse
import multiprocessing
import os
import pickle
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
from benchmarks.tuners.scoring import (
    evals_to_first,
    evals_to_measure,
    evals_to_stay,
    holm,
    median_text,
    ratio_summary,
    ratios_per_peer,
)
from benchmarks.tuners.tasks import TabularTask, Task, default_tasks

ROOT = Path(__file__).resolve().parents[2]
TASKS = Path(__file__).resolve().parent / "tasks"

# hone's own A-Tune-style engines (gp-atune-bayes, gbrt-atune) run with --tuners; by default
# A-Tune is represented by scikit-optimize set up as A-Tune sets it up.
DEFAULT_TUNERS = [t for t in TUNERS if t not in ("gp-atune-bayes", "gbrt-atune")]
_TASKS: list[Task] = []  # shared with forked workers (COCO problems do not pickle)

# Rough seconds per run at budget 50 on this machine (scikit-optimize refits its model and
# optimises its acquisition on every tell): the pool starts the longest runs first, one run
# (task, tuner, seed) per job, so the workers finish together.
COST = {"skopt-gbrt-atune": 22.0, "skopt-gp-atune": 20.0, "smac-hpo": 2.0, "auto": 1.0}


def _job(item: tuple[int, str, int, int]) -> tuple[RunResult, float]:
    """One run; its CPU seconds (wall seconds on a busy machine say little)."""
    index, tuner, seed, budget = item
    warnings.filterwarnings("ignore", message="Loky-backed parallel loops")
    started = time.process_time()
    result = run(_TASKS[index], tuner, seed, budget)
    return result, time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--task", action="append", type=Path, help="a tabular task YAML")
    parser.add_argument("--tuners", default=",".join(DEFAULT_TUNERS), help=", ".join(TUNERS))
    parser.add_argument("--seeds", type=int, default=5, help="for every tuner alike")
    parser.add_argument("--budget", type=int, default=None)
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "tuners.md")
    parser.add_argument("--jobs", type=int, default=2, help="tuner runs in parallel processes")
    parser.add_argument("--save-runs", type=Path, help="keep the raw runs here (a pickle)")
    parser.add_argument("--from-runs", type=Path, help="rewrite the report from saved runs")
    parser.add_argument(
        "--peers-from", type=Path, help="saved runs to take the tuners not rerun from"
    )
    args = parser.parse_args()
    tasks: list[Task] = (
        [TabularTask(p) for p in args.task] if args.task else default_tasks(TASKS, args.quick)
    )
    if args.from_runs:
        saved = pickle.loads(args.from_runs.read_bytes())
        names = saved.pop("tasks")
        tasks = [t for t in tasks if t.name in names]
        write_report(args.output, tasks, **saved)
        return
    budget = args.budget or (30 if args.quick else 50)
    tuners = args.tuners.split(",")
    if args.quick and args.tuners == parser.get_default("tuners"):
        # scikit-optimize spends about 20 s per run: it runs in the default suite only
        tuners = [t for t in tuners if not t.startswith("skopt-")]
    unknown = [t for t in tuners if t not in TUNERS]
    if unknown:
        parser.error(f"unknown tuners {unknown}; known: {', '.join(TUNERS)}")
    started = time.monotonic()
    _TASKS[:] = tasks
    work = [
        (i, tuner, seed, budget)
        for i in range(len(tasks))
        for tuner in tuners
        for seed in range(args.seeds)
    ]
    work.sort(key=lambda item: (-COST.get(item[1], 0.1), -len(tasks[item[0]].space.domains)))
    runs: dict[tuple[str, str], list[RunResult]] = {}
    seconds: dict[str, float] = dict.fromkeys(tuners, 0.0)  # CPU seconds of all its runs
    # The machine is shared: how busy it was (time-weighted) says what the wall time means.
    load_seconds, last = 0.0, started
    with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
        for result, took in pool.imap_unordered(_job, work):
            runs.setdefault((result.task, result.tuner), []).append(result)
            seconds[result.tuner] += took
            load_seconds += os.getloadavg()[0] * (time.monotonic() - last)
            last = time.monotonic()
            if len(runs[result.task, result.tuner]) == args.seeds:
                print(f"{result.task:28s} {result.tuner:16s} done", flush=True)
    done = sum(len(r) for r in runs.values())
    if done != len(work):  # a StopIteration from a tuner ends a pool's loop early
        sys.exit(f"only {done} of {len(work)} runs came back")
    results = {key: sorted(r, key=lambda r: r.seed) for key, r in runs.items()}  # paired seeds
    reran = None
    if args.peers_from:
        reran = tuners
        tuners = _add_saved_peers(args.peers_from, tasks, tuners, results, seconds, args, budget)
    saved = {
        "command": " ".join(["python -m benchmarks.tuners", *sys.argv[1:]]),
        "tuners": tuners,
        "results": results,
        "seeds": args.seeds,
        "jobs": args.jobs,
        "budget": budget,
        "elapsed": time.monotonic() - started,
        "seconds": seconds,
        "load": load_seconds / max(last - started, 1e-9),
        "reran": reran,
    }
    if args.save_runs:  # an hour's runs outlive a mistake in the report
        args.save_runs.parent.mkdir(parents=True, exist_ok=True)
        args.save_runs.write_bytes(pickle.dumps({**saved, "tasks": [t.name for t in tasks]}))
    write_report(args.output, tasks, **saved)


def _add_saved_peers(path: Path, tasks, tuners, results, seconds, args, budget) -> list[str]:
    """Merge saved runs of the tuners not rerun (same tasks, seeds and budget): a change to one
    tuner is then judged against the same peer runs in minutes, not the suite's half hour."""
    saved = pickle.loads(path.read_bytes())
    if (saved["seeds"], saved["budget"]) != (args.seeds, budget):
        sys.exit(
            f"{path}: saved with {saved['seeds']} seeds, budget {saved['budget']}; "
            f"this run has {args.seeds}, {budget}"
        )
    names = {t.name for t in tasks}
    missing = names - set(saved["tasks"])
    if missing:
        sys.exit(f"{path}: no saved runs of {', '.join(sorted(missing))}")
    peers = [t for t in saved["tuners"] if t not in tuners]
    for (task, tuner), runs in saved["results"].items():
        if tuner in peers and task in names:
            results[task, tuner] = runs
    seconds.update({t: saved["seconds"][t] for t in peers})
    return tuners + peers


def write_report(
    output: Path,
    tasks,
    command,
    tuners,
    results,
    seeds,
    jobs,
    budget,
    elapsed,
    seconds,
    load,
    reran: list[str] | None = None,
) -> None:
    lines = [
        "# Tuner benchmark",
        "",
        f"Command: `{command}` "
        f"({len(tasks)} tasks x {len(tuners)} tuners x {seeds} seeds, budget {budget}; "
        f"{elapsed / 60:.1f} min on this 2-core machine, {jobs} parallel jobs, so optimiser "
        "times include contention). Scores are the truth of the "
        "configuration each tuner would deploy after each evaluation."
        + (
            f" Only {', '.join(reran)} ran now (the wall time is theirs); the other tuners' "
            "runs and CPU seconds are those saved by the earlier run named by --peers-from."
            if reran
            else ""
        ),
        "",
        f"CPU time of the runs: {sum(seconds.values()) / 60:.1f} min "
        f"({sum(seconds.values()) / 60 / jobs:.1f} min per job process; the time-weighted "
        f"mean 1-minute load average during the run was {load:.1f}); per tuner, in seconds: "
        + ", ".join(f"{t} {seconds[t]:.0f}" for t in sorted(tuners, key=seconds.get)[::-1])
        + ".",
        "",
        ABOUT,
    ]
    checkpoints = [b for b in (10, 20, 30, 50) if b <= budget]
    ranks: dict[int, list[dict[str, float]]] = {b: [] for b in checkpoints}
    evals_2: dict[str, list[dict[str, float]]] = {"stay": [], "first": [], "measure": []}
    for task in tasks:
        lines += [
            f"## {task.name}",
            "",
            f"Default: {100 * default_gap(task):.1f} % from the optimum."
            + (f" {task.resolution()}" if isinstance(task, TabularTask) else ""),
            "",
            "| tuner | evals to 1 % | to 2 % | to 5 % | first at 2 % | measured 2 % | "
            + " | ".join(f"regret@{b}" for b in checkpoints)
            + " | AUC | final gap | ms per ask | vs auto (Holm p) |",
            "|---" * (10 + len(checkpoints)) + "|",
        ]
        final = {t: [r.regrets[-1] for r in results[task.name, t]] for t in tuners}
        pvalues = {}
        if "auto" in tuners:
            for tuner in tuners:
                if tuner != "auto":
                    diff = np.array(final["auto"]) - np.array(final[tuner])  # the same seeds
                    pvalues[tuner] = 1.0 if not np.any(diff) else float(stats.wilcoxon(diff).pvalue)
        adjusted = holm(pvalues) if pvalues else {}
        for b in checkpoints:
            medians = {
                t: float(np.median([r.regrets[b - 1] for r in results[task.name, t]]))
                for t in tuners
            }
            order = stats.rankdata([medians[t] for t in tuners])
            ranks[b].append(dict(zip(tuners, order, strict=True)))
        if "auto" in tuners and len(tuners) > 1:
            kinds = (
                ("stay", evals_to_stay),
                ("first", evals_to_first),
                ("measure", evals_to_measure),
            )
            for kind, evals in kinds:
                evals_2[kind].append(
                    {
                        t: float(np.median([evals(r, 0.02) for r in results[task.name, t]]))
                        for t in tuners
                    }
                )
        for tuner in tuners:
            runs = results[task.name, tuner]
            cells = [median_text([evals_to_stay(r, w) for r in runs]) for w in (0.01, 0.02, 0.05)]
            cells.append(median_text([evals_to_first(r, 0.02) for r in runs]))
            cells.append(median_text([evals_to_measure(r, 0.02) for r in runs]))
            cells += [f"{np.median([r.regrets[b - 1] for r in runs]):.3f}" for b in checkpoints]
            cells.append(f"{np.mean([np.mean(r.regrets) for r in runs]):.3f}")
            cells.append(f"{100 * np.median([r.gaps[-1] for r in runs]):.1f} %")
            cells.append(f"{1000 * np.median([s for r in runs for s in r.ask_seconds]):.1f}")
            cells.append(f"{adjusted[tuner]:.3f}" if tuner in adjusted else "")
            lines.append(f"| {tuner} | " + " | ".join(cells) + " |")
        lines.append("")
        plot(task.name, tuners, results, budget, output.parent / "tuners")
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
    if evals_2["stay"]:
        lines += [
            "",
            "Median over tasks of (evaluations from which auto's deployed configuration stays "
            "within 2 % of the optimum) / (the same for the best peer on that task): "
            + ratio_summary(evals_2["stay"], budget)
            + "; target <= 0.5.",
            "",
            "The same with the first evaluation at which the deployed configuration is within "
            "2 % (it may leave again): " + ratio_summary(evals_2["first"], budget) + ".",
            "",
            "Search alone, every tuner as if it deployed the best configuration it has measured "
            "(by its truth, which no tuner knows; evaluations until one within 2 % is measured): "
            + ratio_summary(evals_2["measure"], budget)
            + ".",
            "",
            "auto against each peer alone (evaluations to stay within 2 %, auto / peer, median "
            "over the tasks either gets to):",
            "",
            "| peer | median ratio | tasks | auto faster | auto slower |",
            "|---|---|---|---|---|",
            *ratios_per_peer(evals_2["stay"], budget),
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
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text("\n".join(lines) + "\n")
    print(f"wrote {output}")


def default_gap(task: Task) -> float:
    """The default configuration's gap to the optimum, in the tables' units."""
    truth = task.truth(task.space.defaults)
    if truth is None:
        return float("inf")
    return abs(truth - task.optimum()) / task.scale()


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
