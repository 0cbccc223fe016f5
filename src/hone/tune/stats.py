"""Statistics for confirming a winner: paired differences within interleaved rounds.

SciPy's special functions are imported where a quantile is needed: `hone show`, `hone studies`
and the other views import this module only to print gains already computed."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Gain:
    """Relative gain over the baseline in percent, with its confidence half-width at `level`
    (two-sided, in %: a sequential confirmation looks with stricter levels than 95 %)."""

    mean: float
    half_width: float
    rounds: int
    level: float = 95.0

    @property
    def significant(self) -> bool:
        """True when the whole interval lies above zero."""
        return self.rounds >= 2 and self.mean - self.half_width > 0

    def __str__(self) -> str:
        return gain_words(self.mean, self.half_width, self.level, self.rounds)


def gain_words(mean: float, half_width: float | None, level: float, rounds: int | None) -> str:
    """`+4.2 % ± 1.3 % (99.5 %, 3 rounds)`; one round has no spread, so no interval: that is
    said in words rather than as `± inf %` (a stored infinity may come back as None)."""
    plural = "" if rounds == 1 else "s"
    if half_width is None or not math.isfinite(half_width):
        return f"{mean:+.1f} % after {rounds or 0} round{plural}, too few for an interval"
    count = f", {rounds} round{plural}" if rounds else ""
    return f"{mean:+.1f} % ± {half_width:.1f} % ({level:.4g} %{count})"


def _t_quantile(q: float, df: int) -> float:
    """The q-quantile of Student's t with `df` degrees of freedom: the function scipy.stats.t.ppf
    calls, without importing scipy.stats (0.9 of a study's CPU seconds with the random engine)."""
    from scipy.special import stdtrit

    return float(stdtrit(df, q))


def paired_gain(
    candidate: Sequence[float | None],
    baseline: Sequence[float | None],
    relative: bool = True,
    level: float = 95.0,
    baseline_noise: tuple[float, int] = (0.0, 0),
) -> Gain:
    """Gain of higher-is-better scores measured in the same rounds (round i of each side
    side by side), so that drift of a shared, noisy machine cancels out. `relative`: scores
    are raw values (gain in % of the baseline); else they are already percentages.

    `baseline_noise` is the baseline's spread over the whole study and its degrees of freedom
    (CV in % when `relative`, else the standard deviation in points; readings - 1). Two or three
    paired differences can agree by chance and give a narrow interval, so the half-width is the
    wider of the paired t-interval and the interval whose variance pools the differences' with the
    baseline's (a difference varies by sqrt(2) x the baseline's spread, scaled by the
    candidate's ratio to the baseline when relative)."""
    pairs = [
        (c, b)
        for c, b in zip(candidate, baseline, strict=False)
        if c is not None and b is not None and (b != 0 or not relative)
    ]
    if not pairs:
        return Gain(0.0, float("inf"), 0, level)
    diffs = np.array([(c - b) / abs(b) * 100.0 if relative else c - b for c, b in pairs])
    if len(diffs) < 2:
        return Gain(float(diffs[0]), float("inf"), 1, level)
    quantile = 1 - (1 - level / 100.0) / 2
    df = len(diffs) - 1
    variance = float(diffs.var(ddof=1))
    half = _t_quantile(quantile, df) * np.sqrt(variance / len(diffs))
    spread, spread_df = baseline_noise
    if spread > 0 and spread_df > 0:
        scale = float(np.mean([abs(c / b) for c, b in pairs])) if relative else 1.0
        prior = 2.0 * (spread * scale) ** 2
        pooled = (df * variance + spread_df * prior) / (df + spread_df)
        half = max(half, _t_quantile(quantile, df + spread_df) * np.sqrt(pooled / len(diffs)))
    return Gain(float(diffs.mean()), float(half), len(diffs), level)


def detectable_gain(cv: float, rounds: int, level: float = 95.0, power: float = 0.8) -> float:
    """The smallest true gain (in %) that `rounds` interleaved rounds confirm at `level` with
    probability `power`, on a benchmark whose readings vary by `cv` % (one reading each side
    per round: a paired difference varies by about sqrt(2) * cv)."""
    if rounds < 2:
        return float("inf")
    df = rounds - 1
    quantile = 1 - (1 - level / 100.0) / 2
    spread = np.sqrt(2.0) * cv / np.sqrt(rounds)
    return float((_t_quantile(quantile, df) + _t_quantile(power, df)) * spread)


def noise(values: Sequence[float]) -> float:
    """Coefficient of variation in percent (0 with fewer than two values)."""
    array = np.asarray(values, dtype=float)
    if len(array) < 2 or array.mean() == 0:
        return 0.0
    return float(array.std(ddof=1) / abs(array.mean()) * 100.0)


def score_noise(scores: Sequence[float], relative: bool) -> float:
    """The noise of baseline scores in percent: their CV when a score is a metric's value
    (`relative` False), else their standard deviation, since a score that is already a gain in
    percent (several metrics combined) has a mean near zero and a CV of nothing."""
    if not relative:
        return noise(scores)
    return float(np.std(scores, ddof=1)) if len(scores) > 1 else 0.0
