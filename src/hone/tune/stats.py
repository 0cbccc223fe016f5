"""Statistics for confirming a winner: paired differences within interleaved rounds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class Gain:
    """Relative gain over the baseline in percent, with its 95 % confidence half-width."""

    mean: float
    half_width: float
    rounds: int

    @property
    def significant(self) -> bool:
        """True when the whole interval lies above zero."""
        return self.rounds >= 2 and self.mean - self.half_width > 0

    def __str__(self) -> str:
        return f"{self.mean:+.1f} % ± {self.half_width:.1f} % (95 %, {self.rounds} rounds)"


def paired_gain(
    candidate: Sequence[float | None], baseline: Sequence[float | None], relative: bool = True
) -> Gain:
    """Gain of higher-is-better scores measured in the same rounds (round i of each side
    side by side), so that drift of a shared, noisy machine cancels out. `relative`: scores
    are raw values (gain in % of the baseline); else they are already percentages."""
    pairs = [
        (c, b)
        for c, b in zip(candidate, baseline, strict=False)
        if c is not None and b is not None and (b != 0 or not relative)
    ]
    if not pairs:
        return Gain(0.0, float("inf"), 0)
    diffs = np.array([(c - b) / abs(b) * 100.0 if relative else c - b for c, b in pairs])
    if len(diffs) < 2:
        return Gain(float(diffs[0]), float("inf"), 1)
    half = stats.t.ppf(0.975, len(diffs) - 1) * diffs.std(ddof=1) / np.sqrt(len(diffs))
    return Gain(float(diffs.mean()), float(half), len(diffs))


def noise(values: Sequence[float]) -> float:
    """Coefficient of variation in percent (0 with fewer than two values)."""
    array = np.asarray(values, dtype=float)
    if len(array) < 2 or array.mean() == 0:
        return 0.0
    return float(array.std(ddof=1) / abs(array.mean()) * 100.0)
