"""The warm-up transient: the first reading after the workload (re)started, slowed by cold
caches, connection set-up or a JIT, compared with the other readings of its configuration.

The rule (docs/trust.md): the first reading is a warm-up reading when, for some metric that
counts in the score, it is worse than every other reading, worse than their median by more than
3 scaled median absolute deviations (1.4826 x MAD, the standard deviation of normal noise), and
worse by more than 10 % of that median. Two other readings are enough. Only a worse first
reading counts: a restart makes a benchmark slower, not faster. The 10 % floor keeps false
alarms rare when only two or three readings give the MAD (benchmarks/tune/warmup_rule.py: 2.6 %
of ordinary first readings at 5 % noise, while one at half speed is flagged 87-100 % of the
time). A false alarm costs one more reading."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from hone.output import number

MADS = 3.0
FLOOR = 0.10
SCALE = 1.4826


def outlier(
    first: Mapping[str, float],
    others: Sequence[Mapping[str, float]],
    directions: Mapping[str, str],
) -> str | None:
    """Why `first` is a warm-up reading (one phrase), or None. `directions`: metric name ->
    maximize | minimize, for the metrics that count."""
    for name, direction in directions.items():
        values = [o[name] for o in others if name in o]
        if len(values) < 2 or name not in first:
            continue
        median = statistics.median(values)
        spread = SCALE * statistics.median(abs(v - median) for v in values)
        sign = 1.0 if direction == "maximize" else -1.0
        worse_by = sign * (median - first[name])  # > 0: the first reading is worse
        worst = min(sign * v for v in values)
        if (
            sign * first[name] < worst
            and worse_by > MADS * spread
            and worse_by > FLOOR * abs(median)
        ):
            return (
                f"{name}={number(first[name])} against {number(median)} "
                f"for the next {len(values)} readings"
            )
    return None
