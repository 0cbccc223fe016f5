"""The report's summary across tasks, per set of the split: average ranks at budgets 10, 20,
50 and 100, and auto against each peer alone (evaluations to stay within 5 % and 2 %)."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
from scipy import stats

from benchmarks.tuners.harness import RunResult
from benchmarks.tuners.pool import PoolTask
from benchmarks.tuners.scoring import against_each_peer
from benchmarks.tuners.split import in_set
from benchmarks.tuners.tasks import Task

SETS = ("validation", "development", "all")


def checkpoints(budget: int) -> list[int]:
    marks = [b for b in (10, 20, 50, 100) if b <= budget]
    return marks if budget in marks else [*marks, budget]


def crash_text(result: RunResult) -> str:
    """`skopt-gp-atune on redis-3%, seed 0: out of memory (...)`."""
    return f"{result.tuner} on {result.task}, seed {result.seed}: {result.error}"


def header(
    tasks, what, command, tuners, seeds, jobs, budget, elapsed, seconds, load, results=None, **_
) -> list[str]:
    """The run's command, size, wall and CPU time (the saved run's fields by name), and the
    runs that did not finish."""
    failed = [r for runs in (results or {}).values() for r in runs if r.error]
    crashes = [
        "Runs that did not finish, scored as never leaving the default configuration: "
        + "; ".join(map(crash_text, failed))
        + ".",
        "",
    ]
    return [
        f"Command: `{command}` "
        f"({len(tasks)} tasks x {len(tuners)} tuners x {seeds} seeds, budget {budget}; "
        f"{elapsed / 60:.1f} min on this 2-core machine, {jobs} parallel jobs, so optimiser "
        f"times include contention). {what}",
        "",
        f"CPU time of the runs: {sum(seconds.values()) / 60:.1f} min "
        f"({sum(seconds.values()) / 60 / jobs:.1f} min per job process; the time-weighted "
        f"mean 1-minute load average during the run was {load:.1f}); per tuner, in seconds: "
        + ", ".join(f"{t} {seconds[t]:.0f}" for t in sorted(tuners, key=seconds.get)[::-1])
        + ".",
        "",
        *(crashes if failed else []),
    ]


def overall(
    tasks: list[Task],
    tuners: list[str],
    results: dict[tuple[str, str], list[RunResult]],
    budget: int,
    curve: Callable[[RunResult], list[float]],
    evals: Callable[[RunResult, float], float],
) -> list[str]:
    """Per set with tasks: the average rank of each tuner's median score (`curve`, lower is
    better) at each checkpoint, with Friedman's test; then auto against each peer."""
    lines = []
    marks = checkpoints(budget)
    for name in SETS:
        chosen = [t for t in tasks if in_set(name, t.name, _table(t))]
        if not chosen:
            continue
        ranks = {b: [_ranks(t, tuners, results, curve, b) for t in chosen] for b in marks}
        title = name.capitalize() + " tasks"
        if name == "all":  # tasks in neither side of the split (held out, or given by path)
            title = "Whole suite" if lines else "All tasks"
        lines += [
            f"## {title} ({len(chosen)} tasks)",
            "",
            "Average rank of the median score across tasks (1 is best):",
            "",
            "| tuner | " + " | ".join(f"budget {b}" for b in marks) + " |",
            "|---" * (1 + len(marks)) + "|",
        ]
        for tuner in tuners:
            cells = [f"{np.mean([r[tuner] for r in ranks[b]]):.2f}" for b in marks]
            lines.append(f"| {tuner} | " + " | ".join(cells) + " |")
        if len(chosen) >= 2 and len(tuners) >= 3:
            friedman = [friedman_p([[r[t] for r in ranks[b]] for t in tuners]) for b in marks]
            lines.append("| Friedman p | " + " | ".join(friedman) + " |")
        lines.append("")
        if "auto" not in tuners or len(tuners) < 2:
            continue
        for b in marks:
            average = {t: float(np.mean([r[t] for r in ranks[b]])) for t in tuners}
            peer = min((t for t in tuners if t != "auto"), key=average.get)
            met = "met" if average["auto"] < average[peer] else "not met"
            lines.append(
                f"Best average rank at budget {b}: auto {average['auto']:.2f}, best peer "
                f"{peer} {average[peer]:.2f} ({met})."
            )
        within = {
            w: [
                {t: float(np.median([evals(r, w) for r in results[task.name, t]])) for t in tuners}
                for task in chosen
            ]
            for w in (0.05, 0.02)
        }
        lines += [
            "",
            "auto against each peer alone: median over tasks of (evaluations for auto to stay "
            "within 5 % of the optimum) / (the same for the peer), the tasks counted (either "
            "gets there) and those where auto is slower (ratio > 1); the same within 2 %; and, "
            "as a yardstick, the ratio within 5 % of the best of the other tuners (auto among "
            "them) taken task by task, which no single tuner is:",
            "",
            "| peer | ratio 5 % | tasks | auto slower | ratio 2 % | tasks | auto slower "
            "| best of the others, 5 % |",
            "|---|---|---|---|---|---|---|---|",
            *against_each_peer(within[0.05], within[0.02], budget),
            "",
        ]
    return lines


def _ranks(task, tuners, results, curve, b) -> dict[str, float]:
    medians = [float(np.median([curve(r)[b - 1] for r in results[task.name, t]])) for t in tuners]
    return dict(zip(tuners, stats.rankdata(medians), strict=True))


def _table(task: Task) -> str | None:
    return task.table.name if isinstance(task, PoolTask) else None


def friedman_p(ranks: list[list[float]]) -> str:
    """Friedman's p over tasks, or `-` where every task ties every tuner (a flat table): the
    test is undefined there, and scipy says so in a warning on stderr."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        p = stats.friedmanchisquare(*ranks).pvalue
    return "-" if np.isnan(p) else f"{p:.3g}"
