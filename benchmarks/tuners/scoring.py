"""The report's statistics: evaluations to a gap, the ratio to the best peer, Holm's correction.

A user stops tuning at some point and keeps what the tuner deploys then, so what matters is the
evaluation from which the deployed configuration stays good, not the first lucky visit."""

from __future__ import annotations

import math

import numpy as np

from benchmarks.tuners.harness import RunResult


def evals_to_stay(result: RunResult, within: float) -> float:
    """The first evaluation from which the deployed configuration's gap stays <= `within` up
    to the budget (infinite if the last one is outside)."""
    settled = float("inf")
    for index in range(len(result.gaps), 0, -1):
        if result.gaps[index - 1] > within:
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
        if gap <= within:
            return index
    return float("inf")


def ratio_to_best_peer(evals: dict[str, float], budget: int) -> float | None:
    """auto's evaluations over the best peer's on one task (both medians over seeds).

    None when no tuner gets there (the task says nothing); a peer that never gets there counts
    as budget + 1 evaluations (auto's ratio is then at most 1); auto never getting there while
    a peer does is infinite."""
    auto, best = evals["auto"], _best_peer(evals)
    if math.isinf(auto) and math.isinf(best):
        return None
    return auto / (best if math.isfinite(best) else budget + 1)


def ratios_per_peer(evals_per_task: list[dict[str, float]], budget: int) -> list[str]:
    """Table rows: auto's ratio against each single peer (median over tasks, counted as in
    ratio_to_best_peer), and on how many tasks auto is faster or slower. The best peer per task
    is the luckiest of all; against any one of them the picture is steadier."""
    rows = []
    for peer in [t for t in evals_per_task[0] if t != "auto"]:
        pairs = [{"auto": e["auto"], peer: e[peer]} for e in evals_per_task]
        ratios = [r for r in (ratio_to_best_peer(p, budget) for p in pairs) if r is not None]
        if ratios:
            faster, slower = sum(r < 1 for r in ratios), sum(r > 1 for r in ratios)
            rows.append(
                f"| {peer} | {np.median(ratios):.2f} | {len(ratios)} | {faster} | {slower} |"
            )
    return rows


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


def ratio_summary(evals_per_task: list[dict[str, float]], budget: int) -> str:
    """The median ratio over tasks, saying how many tasks count and how."""
    ratios = [ratio_to_best_peer(evals, budget) for evals in evals_per_task]
    counted = [r for r in ratios if r is not None]
    if not counted:
        return f"none (no tuner gets there on any of {len(ratios)} tasks)"
    only_auto = sum(
        1 for e in evals_per_task if math.isfinite(e["auto"]) and math.isinf(_best_peer(e))
    )
    only_peer = sum(1 for r in counted if math.isinf(r))
    return (
        f"{np.median(counted):.2f} ({len(counted)} of {len(ratios)} tasks counted, "
        f"{len(ratios) - len(counted)} that no tuner gets to within the budget left out; "
        f"{only_auto} that only auto gets to, counted as auto / (budget + 1); "
        f"{only_peer} that only a peer gets to, counted as infinite)"
    )


def _best_peer(evals: dict[str, float]) -> float:
    return min(v for t, v in evals.items() if t != "auto")
