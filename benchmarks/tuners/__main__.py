"""The tuner benchmark: every tuner on every task with several seeds, side by side.

    python -m benchmarks.tuners                 # default suite: 29 tasks, 1 seed, budget 100
    python -m benchmarks.tuners --set validation   # one side of the split (or development)
    python -m benchmarks.tuners --full --seeds 3   # every pool table at every noise level
    python -m benchmarks.tuners --quick         # 13 tasks, budget 30, cheap tuners only
    python -m benchmarks.tuners --protocol promisetune  # PromiseTune's systems, its protocol
    python -m benchmarks.tuners --task path/to/NAME.yaml --tuners auto,optuna-tpe --seeds 10
    python -m benchmarks.tuners --task benchmarks/tuners/pools/SS-A.csv.gz  # any pool table
    python -m benchmarks.tuners --save-runs runs.pkl    # later: --from-runs runs.pkl (no rerun)
    python -m benchmarks.tuners --tuners auto --peers-from runs.pkl  # rerun auto, peers as saved

Writes docs/tuners.md (tables) and docs/tuners/*.png (median regret curves of the 15 tasks
that are not pool tables; a report elsewhere keeps its curves in a folder of its own name
beside it); the PromiseTune protocol writes docs/tuners-promisetune.md. With --task and no
--output the report is tuners-NAME.md in the current folder (NAME: the first task's)."""

from __future__ import annotations

import argparse
import multiprocessing
import os
import pickle
import resource
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from urllib.parse import quote

# Parallel jobs on a small shared machine: one BLAS thread per process, for every tuner alike
# (threads of tiny matrix products only contend; set before NumPy loads).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from scipy import stats

from benchmarks.tuners.about import ABOUT
from benchmarks.tuners.harness import TUNERS, RunResult, crashed, run
from benchmarks.tuners.pool import NOISE_LEVELS, PoolTask
from benchmarks.tuners.process_peer import missing as missing_process
from benchmarks.tuners.promisetune import write_promisetune_report
from benchmarks.tuners.report import checkpoints, crash_text, header, overall
from benchmarks.tuners.scoring import (
    evals_to_first,
    evals_to_measure,
    evals_to_stay,
    holm,
    median_text,
)
from benchmarks.tuners.split import in_set
from benchmarks.tuners.suite import (
    holdout_tables,
    named_tasks,
    path_tasks,
    promisetune_tasks,
    suite_tasks,
)
from benchmarks.tuners.tabular_io import TaskError, task_name
from benchmarks.tuners.tasks import TabularTask, Task
from benchmarks.tuners.torch_peers import missing as missing_torch

ROOT = Path(__file__).resolve().parents[2]
TASKS = Path(__file__).resolve().parent / "tasks"

# hone's own A-Tune-style engines (gp-atune-bayes, gbrt-atune) run with --tuners; by default
# A-Tune is represented by scikit-optimize's GP set up as A-Tune sets it up (its GBRT, weaker
# on the earlier suite and 80 CPU s per run at budget 100, runs with --tuners).
DEFAULT_TUNERS = [
    t for t in TUNERS if t not in ("gp-atune-bayes", "gbrt-atune", "skopt-gbrt-atune")
]
_TASKS: list[Task] = []  # shared with forked workers (COCO problems do not pickle)

# Rough CPU seconds per run at budget 100 on this machine (scikit-optimize refits its model
# and optimises its acquisition on every tell; a peer not listed counts as 0.1): the pool
# starts the longest runs first, one run (task, tuner, seed) per job, so the workers finish
# together, and the estimate printed before a run adds them up.
COST = {
    "skopt-gp-atune": 230.0,
    "openbox": 250.0,
    "skopt-gbrt-atune": 80.0,
    "optuna-gp": 60.0,
    "smac-hpo": 20.0,
    "auto": 2.0,
}
EXPENSIVE = 50.0  # CPU s per run at budget 100: left out of --quick


def _job(item: tuple[int, str, int, int, bool]) -> tuple[RunResult, float]:
    """One run; its CPU seconds (wall seconds on a busy machine say little). A run that needs
    more than its share of the memory fails alone and is scored as a crashed tuner (A-Tune's
    scikit-optimize GP, with every numeric knob a category, wanted over 20 GB on PromiseTune's
    redis table, whose knobs take up to 2,234 values; the system killed the whole worker, and
    the run waited for it forever)."""
    index, tuner, seed, budget, baseline = item
    warnings.filterwarnings("ignore", message="Loky-backed parallel loops")
    started = time.process_time()
    try:
        result = run(_TASKS[index], tuner, seed, budget, baseline=baseline)
    except MemoryError:
        limit = resource.getrlimit(resource.RLIMIT_AS)[0] / 2**30
        error = f"out of memory (at most {limit:.1f} GB per job)"
        result = crashed(_TASKS[index], tuner, seed, budget, error)
    except Exception as exc:  # a peer's library refusing an input of one task: that run
        # alone, named, not the whole benchmark
        error = f"{type(exc).__name__}: {str(exc).splitlines()[0].rstrip('.') if str(exc) else ''}"
        result = crashed(_TASKS[index], tuner, seed, budget, error)
    return result, time.process_time() - started


def _cap_memory(jobs: int) -> None:
    """Each job process may use its share of the machine's memory, a fifth kept back."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    limit = int(total * 0.8 / jobs)
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))


def _positive(text: str) -> int:
    """A count of seeds, evaluations or jobs, at least 1: a 0 would fall back to the default
    and a negative count fail deep in a run, after the tasks are loaded."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: must be at least 1")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--set",
        choices=("all", "development", "validation", "holdout"),
        default="all",
        help="the tasks of one side of the split (benchmarks/tuners/split.yaml), or the "
        "held-out systems (benchmarks/tuners/holdout/) at every noise level",
    )
    parser.add_argument("--full", action="store_true", help="every pool table at every noise level")
    parser.add_argument(
        "--protocol",
        choices=("hone", "promisetune"),
        default="hone",
        help="promisetune: its systems noise-free, no baseline, the best configuration found",
    )
    parser.add_argument(
        "--task", action="append", type=Path, help="a tabular task YAML or a pool table CSV"
    )
    parser.add_argument("--tuners", default=",".join(DEFAULT_TUNERS), help=", ".join(TUNERS))
    parser.add_argument("--seeds", type=_positive, default=None, help="for every tuner alike")
    parser.add_argument("--budget", type=_positive, default=None)
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument(
        "--jobs", type=_positive, default=2, help="tuner runs in parallel processes"
    )
    parser.add_argument("--save-runs", type=Path, help="keep the raw runs here (a pickle)")
    parser.add_argument("--from-runs", type=Path, help="rewrite the report from saved runs")
    parser.add_argument(
        "--peers-from",
        type=Path,
        action="append",
        help="saved runs to take the tuners not rerun from (repeat it: runs made apart, "
        "e.g. an expensive peer in a process of its own)",
    )
    args = parser.parse_args()
    promisetune = args.protocol == "promisetune"
    name = "tuners-promisetune.md" if promisetune else "tuners.md"
    if not args.output and args.task:
        # tasks of the user's own are not the project's figures: their report is written
        # where the command runs, never over docs/tuners.md
        args.output = Path(f"tuners-{task_name(args.task[0])}.md")
    args.output = args.output or ROOT / "docs" / name
    args.seeds = args.seeds or (3 if promisetune else 1)
    try:
        if args.from_runs:
            saved = pickle.loads(args.from_runs.read_bytes())
            tasks = _saved_tasks(args, promisetune, saved.pop("tasks"))
        else:
            tasks = _tasks(args, promisetune)
        names = [t.name for t in tasks]
        twice = next((n for n in names if names.count(n) > 1), None)
        if twice:  # runs are kept by task name: two tasks of one name would be mixed up
            raise TaskError(f"--task: two tasks are named {twice}; rename one of the files")
    except TaskError as exc:  # a task file given by path, with a mistake in it: one line
        print(exc, file=sys.stderr)
        sys.exit(2)  # bad input, as argparse exits for a bad option
    report = write_promisetune_report if promisetune else write_report
    if args.from_runs:
        report(args.output, tasks, **saved)
        return
    budget = args.budget or (30 if args.quick else 100)
    tuners = args.tuners.split(",")
    if args.quick and args.tuners == parser.get_default("tuners"):
        # the expensive peers (scikit-optimize: minutes per run) run in the default suite only
        tuners = [t for t in tuners if COST.get(t, 0.1) < EXPENSIVE]
    unknown = [t for t in tuners if t not in TUNERS]
    if unknown:
        parser.error(f"unknown tuners {unknown}; known: {', '.join(TUNERS)}")
    absent = {t: missing_torch(t) or missing_process(t) for t in tuners}
    for reason in filter(None, absent.values()):
        print(f"skipped: {reason}", file=sys.stderr)
    tuners = [t for t in tuners if not absent[t]]
    started = time.monotonic()
    _TASKS[:] = tasks
    work = [
        (i, tuner, seed, budget, not promisetune)
        for i in range(len(tasks))
        for tuner in tuners
        for seed in range(args.seeds)
    ]
    work.sort(key=lambda item: (-COST.get(item[1], 0.1), -len(tasks[item[0]].space.domains)))
    cost = sum(COST.get(item[1], 0.1) for item in work) * budget / 100
    print(
        f"{len(tasks)} tasks x {len(tuners)} tuners x {args.seeds} seeds, budget {budget}: "
        f"about {cost / 60 / args.jobs:.0f} min on {args.jobs} idle cores",
        flush=True,
    )
    runs: dict[tuple[str, str], list[RunResult]] = {}
    seconds: dict[str, float] = dict.fromkeys(tuners, 0.0)  # CPU seconds of all its runs
    # The machine is shared: how busy it was (time-weighted) says what the wall time means.
    load_seconds, last = 0.0, started
    # a job process the system kills ends the benchmark, naming the runs it held (a
    # multiprocessing.Pool would wait for them for ever)
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(args.jobs, context, _cap_memory, (args.jobs,)) as pool:
        futures = {pool.submit(_job, item): item for item in work}
        try:
            for future in as_completed(futures):
                result, took = future.result()
                runs.setdefault((result.task, result.tuner), []).append(result)
                seconds[result.tuner] += took
                load_seconds += os.getloadavg()[0] * (time.monotonic() - last)
                last = time.monotonic()
                if result.error:
                    print(f"{crash_text(result)}: scored as the default", file=sys.stderr)
                if len(runs[result.task, result.tuner]) == args.seeds:
                    print(f"{result.task:28s} {result.tuner:16s} done", flush=True)
        except BrokenProcessPool:
            held = [futures[f] for f in futures if f.done() and f.exception() is not None]
            names = ", ".join(f"{tasks[i].name} {t} seed {s}" for i, t, s, *_ in held[:3])
            sys.exit(f"a job process died (killed by the system?); {len(held)} runs unfinished, "
                     f"among them {names}")  # fmt: skip
    done = sum(len(r) for r in runs.values())
    if done != len(work):  # a StopIteration from a tuner ends a pool's loop early
        sys.exit(f"only {done} of {len(work)} runs came back")
    results = {key: sorted(r, key=lambda r: r.seed) for key, r in runs.items()}  # paired seeds
    reran = None
    if args.peers_from:
        reran = tuners
        for path in args.peers_from:
            tuners = _add_saved_peers(path, tasks, reran, tuners, results, seconds, args, budget)
        absent = sorted({t.name for t in tasks for p in tuners if (t.name, p) not in results})
        if absent:
            sys.exit(f"--peers-from: no saved runs of {', '.join(absent)}")
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
    report(args.output, tasks, **saved)


def _tasks(args: argparse.Namespace, promisetune: bool) -> list[Task]:
    levels = (0.0,) if promisetune else NOISE_LEVELS
    if args.set == "holdout":
        return path_tasks(args.task or holdout_tables(), levels)
    if args.task:
        return [t for t in path_tasks(args.task, levels) if in_set(args.set, t.name, _table(t))]
    if promisetune:
        return list(promisetune_tasks())
    return suite_tasks(TASKS, args.quick, args.full, args.set)


def _saved_tasks(args: argparse.Namespace, promisetune: bool, names: list[str]) -> list[Task]:
    """The tasks of saved runs, in the order they ran (the report's order): those given by
    --task, else the suite's or a held-out system's of those names. A task found nowhere
    stops the rewrite: a report without its results would say nothing of them."""
    if args.task or promisetune:
        known = {t.name: t for t in _tasks(args, promisetune)}
    else:
        known = named_tasks(TASKS, names)
    missing = [n for n in names if n not in known]
    if missing:
        sys.exit(
            f"{args.from_runs}: no task {', '.join(missing[:3])}"
            f"{f' and {len(missing) - 3} more' if len(missing) > 3 else ''}; "
            "give the --task files the runs were made with"
        )
    return [known[n] for n in names]


def _table(task: Task) -> str | None:
    return task.table.name if isinstance(task, PoolTask) else None


def _add_saved_peers(path: Path, tasks, reran, tuners, results, seconds, args, budget) -> list[str]:
    """Merge saved runs of the tuners not rerun (same seeds and budget): a change to one
    tuner is then judged against the same peer runs in minutes, not the suite's half hour.
    Files made apart may hold different tasks (tasks added to the suite later); every task of
    the run must be in one of them."""
    saved = pickle.loads(path.read_bytes())
    if (saved["seeds"], saved["budget"]) != (args.seeds, budget):
        sys.exit(
            f"{path}: saved with {saved['seeds']} seeds, budget {saved['budget']}; "
            f"this run has {args.seeds}, {budget}"
        )
    names = {t.name for t in tasks}
    peers = [t for t in saved["tuners"] if t not in reran]
    for (task, tuner), runs in saved["results"].items():
        if tuner in peers and task in names:
            results[task, tuner] = runs
    for peer in peers:
        seconds[peer] = seconds.get(peer, 0.0) + saved["seconds"][peer]
    return tuners + [p for p in peers if p not in tuners]


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
    what = (
        "Scores are the truth of the configuration each tuner would deploy after each evaluation."
        + (
            f" Only {', '.join(reran)} ran now (the wall time is theirs); the other tuners' "
            "runs and CPU seconds are those saved by the earlier run named by --peers-from."
            if reran
            else ""
        )
    )
    lines = [
        "# Tuner benchmark",
        "",
        *header(tasks, what, command, tuners, seeds, jobs, budget, elapsed, seconds, load, results),
        ABOUT,
    ]
    summary = overall(tasks, tuners, results, budget, lambda r: r.regrets, evals_to_stay)
    lines += ["# Results", "", *summary, "# Per task", ""]
    marks = checkpoints(budget)
    for task in tasks:
        lines += [
            f"## {task.name}",
            "",
            _default_text(task)
            + (f" {task.resolution()}" if isinstance(task, TabularTask) else "")
            + (f" {_pool_text(task)}" if isinstance(task, PoolTask) else ""),
            "",
            "| tuner | evals to 1 % | to 2 % | to 5 % | first at 2 % | measured 2 % | "
            + " | ".join(f"regret@{b}" for b in marks)
            + " | AUC | final gap | ms per ask | vs auto (Holm p) |",
            "|---" * (10 + len(marks)) + "|",
        ]
        final = {t: [r.regrets[-1] for r in results[task.name, t]] for t in tuners}
        pvalues = {}
        if "auto" in tuners and seeds > 1:
            for tuner in tuners:
                if tuner != "auto":
                    diff = np.array(final["auto"]) - np.array(final[tuner])  # the same seeds
                    pvalues[tuner] = 1.0 if not np.any(diff) else float(stats.wilcoxon(diff).pvalue)
        adjusted = holm(pvalues) if pvalues else {}
        for tuner in tuners:
            runs = results[task.name, tuner]
            cells = [median_text([evals_to_stay(r, w) for r in runs]) for w in (0.01, 0.02, 0.05)]
            cells.append(median_text([evals_to_first(r, 0.02) for r in runs]))
            cells.append(median_text([evals_to_measure(r, 0.02) for r in runs]))
            cells += [f"{np.median([r.regrets[b - 1] for r in runs]):.3f}" for b in marks]
            cells.append(f"{np.mean([np.mean(r.regrets) for r in runs]):.3f}")
            final_gap = float(np.median([r.gaps[-1] for r in runs]))
            cells.append(f"{100 * final_gap:.1f} %" if np.isfinite(final_gap) else "failure region")
            asks = [s for r in runs for s in r.ask_seconds]  # none if every run crashed
            cells.append(f"{1000 * np.median(asks):.1f}" if asks else "-")
            cells.append(f"{adjusted[tuner]:.3f}" if tuner in adjusted else "")
            lines.append(f"| {tuner} | " + " | ".join(cells) + " |")
        lines.append("")
        if not isinstance(task, PoolTask):  # the pool tasks' curves would only fill the page
            # beside the report, in a folder of its name (docs/tuners.md: docs/tuners/)
            plot(task.name, tuners, results, budget, output.parent / output.stem)
            link = quote(f"{output.stem}/{task.name.replace('%', 'pct')}.png")  # spaces too
            lines += [f"![{task.name}]({link})", ""]
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text("\n".join(lines) + "\n")
    print(f"wrote {output}")


def _pool_text(task: PoolTask) -> str:
    noise = f"{round(100 * task.noise)} % multiplicative noise" if task.noise else "noise-free"
    return (
        f"Pool of {len(task.table.configs)} configurations of {task.system} "
        f"({task.table.objective}, {'minimised' if task.minimize else 'maximised'}), {noise}."
    )


def _default_text(task: Task) -> str:
    gap = default_gap(task)
    if gap == float("inf"):
        return "Default: a failure region (it fails in most of its rows)."
    return f"Default: {100 * gap:.1f} % from the optimum."


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
    # SMAC3's proposals follow the order of sets of names, which Python's string hashing
    # changes from one process to the next: one hash seed makes a seed's figures repeatable
    if os.environ.get("PYTHONHASHSEED") != "0":
        argv = [sys.executable, "-m", "benchmarks.tuners", *sys.argv[1:]]
        os.execve(sys.executable, argv, {**os.environ, "PYTHONHASHSEED": "0"})
    main()
