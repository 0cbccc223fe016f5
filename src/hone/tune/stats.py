"""Statistics for confirming a winner: paired comparisons within interleaved rounds.

SciPy's special functions are imported where a quantile is needed: `hone show`, `hone studies`
and the other views import this module only to print gains already computed."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Gain:
    """Gain over the baseline in percent and its confidence interval [low, high] at `level`
    (two-sided, in %: a sequential confirmation looks with stricter levels than 95 %). A gain
    in % of the baseline comes from a mean of log ratios, so its interval is not symmetric."""

    mean: float
    low: float
    high: float
    rounds: int
    level: float = 95.0

    @property
    def half_width(self) -> float:
        """Half the interval's width (its distance to the mean when symmetric)."""
        return (self.high - self.low) / 2

    @property
    def significant(self) -> bool:
        """True when the whole interval lies above zero."""
        return self.rounds >= 2 and self.low > 0

    @property
    def worse(self) -> bool:
        """True when the whole interval lies below zero."""
        return self.rounds >= 2 and self.high < 0

    def __str__(self) -> str:
        return gain_words(self.mean, self.low, self.high, self.level, self.rounds)


def gain_words(
    mean: float, low: float | None, high: float | None, level: float, rounds: int | None
) -> str:
    """`+4.2 % ± 1.3 % (99.5 %, 3 rounds)`, or `+65.0 % (+10.5 % to +146.0 %, ...)` when the
    interval is not symmetric; one round has no spread, so no interval: that is said in words
    rather than as `± inf %` (a stored infinity may come back as None)."""
    plural = "" if rounds == 1 else "s"
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return f"{mean:+.1f} % after {rounds or 0} round{plural}, too few for an interval"
    count = f", {rounds} round{plural}" if rounds else ""
    below, above = f"{mean - low:.1f}", f"{high - mean:.1f}"
    if below == above:
        return f"{mean:+.1f} % ± {below} % ({level:.4g} %{count})"
    return f"{mean:+.1f} % ({low:+.1f} % to {high:+.1f} %, {level:.4g} %{count})"


def gain_interval(gain: dict[str, Any]) -> tuple[float | None, float | None]:
    """A stored gain's interval ends; a record written before they were stored has the mean
    ± a half-width instead."""
    if "low" in gain:
        return gain["low"], gain.get("high")
    half = gain.get("half_width")
    return (None, None) if half is None else (gain["mean"] - half, gain["mean"] + half)


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
    are raw values (gain in % of the baseline); else they are already percentages and the
    gain is the mean paired difference in points.

    A relative gain is the mean of the rounds' log ratios, back as a percentage: a mean of
    ratios c / b would be pulled up by any round whose baseline reading is small (1/b is
    convex), while log(c / b) = -log(b / c), so swapping the sides only turns the sign. For a
    minimised metric (negative scores) the percentage is the reduction, 1 - c / b, as the
    search's gains; a round whose two readings differ in sign or are zero leaves no log ratio,
    and then the rounds' relative differences stand in for it.

    `baseline_noise` is the baseline's spread over the whole study and its degrees of freedom
    (CV in % when `relative`, else the standard deviation in points; readings - 1). Two or three
    paired differences can agree by chance and give a narrow interval, so the interval is the
    wider of the paired t-interval and the interval whose variance pools the differences' with
    the baseline's (a difference of two readings varies by sqrt(2) x the baseline's spread; on
    the log scale a spread of CV is sqrt(log(1 + CV^2)), whatever the candidate's level)."""
    pairs = [
        (c, b)
        for c, b in zip(candidate, baseline, strict=False)
        if c is not None and b is not None and (b != 0 or not relative)
    ]
    if not pairs:
        return Gain(0.0, -math.inf, math.inf, 0, level)
    sign = 1.0 if pairs[0][1] > 0 else -1.0
    logs = relative and all(c / b > 0 and b * sign > 0 for c, b in pairs)
    if logs:
        diffs = np.array([sign * math.log(c / b) for c, b in pairs])
    else:
        diffs = np.array([(c - b) / abs(b) * 100.0 if relative else c - b for c, b in pairs])
    mean = float(diffs.mean())
    spread, spread_df = baseline_noise
    if logs:
        prior = 2.0 * math.log1p((spread / 100.0) ** 2)
    else:
        scale = float(np.mean([abs(c / b) for c, b in pairs])) if relative else 1.0
        prior = 2.0 * (spread * scale) ** 2
    half = half_width(diffs, level, (prior, spread_df))
    if not logs:
        return Gain(mean, mean - half, mean + half, len(diffs), level)
    ends = [_percent(x, sign) for x in (mean, mean - half, mean + half)]
    return Gain(*ends, len(diffs), level)


def half_width(diffs: np.ndarray, level: float, prior: tuple[float, int]) -> float:
    """The interval's half-width at `level`: the wider of the paired t-interval of `diffs` and
    the interval whose variance pools theirs with `prior` (a variance of one difference and its
    degrees of freedom, from the baseline's readings over the study); infinite for one."""
    if len(diffs) < 2:
        return math.inf
    quantile = 1 - (1 - level / 100.0) / 2
    df = len(diffs) - 1
    variance = float(diffs.var(ddof=1))
    half = _t_quantile(quantile, df) * math.sqrt(variance / len(diffs))
    prior_variance, prior_df = prior
    if prior_variance > 0 and prior_df > 0:
        pooled = (df * variance + prior_df * prior_variance) / (df + prior_df)
        pooled_half = _t_quantile(quantile, df + prior_df) * math.sqrt(pooled / len(diffs))
        half = max(half, pooled_half)
    return half


def _percent(log_ratio: float, sign: float) -> float:
    """A mean log ratio as a gain in %: c / b - 1 for a maximised metric, 1 - c / b (the
    reduction) for a minimised one, as the search reports gains."""
    return 100.0 * math.expm1(log_ratio) if sign > 0 else -100.0 * math.expm1(-log_ratio)


def detectable_gain(
    cv: float, rounds: int, level: float = 95.0, power: float = 0.8, relative: bool = True
) -> float:
    """The smallest true gain (in %) that `rounds` interleaved rounds confirm at `level` with
    probability `power`, on a benchmark whose readings vary by `cv` % (one reading each side
    per round: a paired difference varies by about sqrt(2) x the readings' spread). Relative,
    on the log scale as paired_gain (a spread of sqrt(log(1 + CV^2)), the gain back in %);
    else `cv` is the spread of scores already in points."""
    if rounds < 2:
        return float("inf")
    df = rounds - 1
    quantile = 1 - (1 - level / 100.0) / 2
    spread = math.sqrt(math.log1p((cv / 100.0) ** 2)) if relative else cv
    reach = (_t_quantile(quantile, df) + _t_quantile(power, df)) * math.sqrt(2.0 / rounds) * spread
    return 100.0 * math.expm1(reach) if relative else reach


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
