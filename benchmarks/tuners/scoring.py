"""The report's statistics: evaluations to a gap, auto's ratio to each peer, Holm's correction.

A user stops tuning at some point and keeps what the tuner deploys then, so what matters is the
evaluation from which the deployed configuration stays good, not the first lucky visit."""

from __future__ import annotations

import math

import numpy as np

from benchmarks.tuners.harness import RunResult


def is_within(gap: float, within: float) -> bool:
    """A gap within `within` (0.02: 2 %), its last bits of floating point forgiven: 1.02
    against an optimum of 1.00 is a gap of 0.020000000000000018, and was not within 2 %."""
    return gap <= within * (1 + 1e-9)


def evals_to_stay(result: RunResult, within: float) -> float:
    """The first evaluation from which the deployed configuration's gap stays <= `within` up
    to the budget (infinite if the last one is outside)."""
    settled = float("inf")
    for index in range(len(result.gaps), 0, -1):
        if not is_within(result.gaps[index - 1], within):
            break
        settled = index
    return settled


def evals_to_first(result: RunResult, within: float) -> float:
    """The first evaluation at which the deployed configuration's gap is <= `within`."""
    return _first_within(result.gaps, within)


def evals_to_measure(result: RunResult, within: float) -> float:
    """The first evaluation after which the tuner has measured a configuration within `within`
    (whether or not it deploys it): how fast its search is, apart from its decisions."""
    return _first_within(result.measured, within)


def _first_within(gaps: list[float], within: float) -> float:
    for index, gap in enumerate(gaps, start=1):
        if is_within(gap, within):
            return index
    return float("inf")


def ratio(auto: float, peer: float, budget: int) -> float | None:
    """auto's evaluations over a peer's on one task (both medians over seeds).

    None when neither gets there (the task says nothing); a peer that never gets there counts
    as budget + 1 evaluations (auto's ratio is then at most 1); auto never getting there while
    the peer does is infinite."""
    if math.isinf(auto) and math.isinf(peer):
        return None
    return auto / (peer if math.isfinite(peer) else budget + 1)


def against_each_peer(
    within_5: list[dict[str, float]], within_2: list[dict[str, float]], budget: int
) -> list[str]:
    """Table rows: per peer, the median over tasks of auto's evaluations to stay within 5 %
    over the peer's, the tasks counted and those where auto is slower; the same within 2 %;
    last, the ratio within 5 % of the best of all the other tuners, task by task.

    That last figure is a yardstick for auto's: a tuner that matched, on every task, whichever
    other tuner (auto among them) got there first would score it against this peer."""
    rows = []
    for peer in [t for t in within_5[0] if t != "auto"]:
        cells = []
        for evals in (within_5, within_2):
            cells += _cells([ratio(e["auto"], e[peer], budget) for e in evals])
        best = [ratio(min(v for t, v in e.items() if t != peer), e[peer], budget) for e in within_5]
        cells.append(_cells(best)[0])
        rows.append(f"| {peer} | " + " | ".join(cells) + " |")
    return rows


def _cells(ratios: list[float | None]) -> list[str]:
    """The median ratio, the tasks counted and those slower (ratio > 1)."""
    counted = [r for r in ratios if r is not None]
    median = f"{np.median(counted):.2f}" if counted else "-"
    return [median, str(len(counted)), str(sum(r > 1 for r in counted))]


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
