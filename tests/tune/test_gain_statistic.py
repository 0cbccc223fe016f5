"""The confirmation's gain: a mean of log ratios, so that noise whose readings vary by tens of
percent neither inflates the figure nor confirms a placebo (docs/trust.md, benchmarks/tune/
gain_statistic.py). The readings below are draws of such a placebo: both sides the same
benchmark, log-normal noise of CV 120 %."""

from __future__ import annotations

import pytest

from hone.tune.stats import noise, paired_gain


def pooled(*readings: list[float]) -> tuple[float, int]:
    """The baseline's study-wide noise as the runner pools it: CV and degrees of freedom."""
    values = [abs(x) for part in readings for x in part]
    return noise(values), len(values) - 1


def test_the_same_readings_do_not_make_both_sides_win() -> None:
    """A mean of per-round ratios gave the candidate +303 % over the baseline and, the sides
    swapped, the baseline +364 % over the candidate: small readings on either side pull it up.
    The log ratios give one gain and its inverse."""
    base = [295.0, 10.0, 189.0, 152.0, 11.0, 154.0]
    cand = [30.0, 131.0, 125.0, 11.0, 108.0, 62.0]
    spread = pooled([68.0, 149.0, 95.0], base)
    gain = paired_gain(cand, base, level=97.5, baseline_noise=spread)
    back = paired_gain(base, cand, level=97.5, baseline_noise=spread)
    assert (1 + gain.mean / 100) * (1 + back.mean / 100) == pytest.approx(1.0)
    assert (1 + gain.low / 100) * (1 + back.high / 100) == pytest.approx(1.0)
    assert -30.0 < gain.mean < 0.0 < gain.high and gain.low < 0.0
    assert not gain.significant and not back.significant


def test_a_latency_placebo_is_not_confirmed() -> None:
    """Three rounds of a smaller-is-better metric where the candidate happened to read low each
    time: the mean of reductions 1 - c/b (bounded by 100 %) confirmed +61.6 % ± 61.3 %; the
    log ratios, whose spread does not shrink with the candidate's level, do not."""
    base = [-283.0, -56.0, -305.0]  # scores of a minimised metric are negated
    cand = [-142.0, -19.0, -95.0]
    spread = pooled([66.0, 14.0, 241.0], base)
    gain = paired_gain(cand, base, level=97.5, baseline_noise=spread)
    assert not gain.significant
    assert 55.0 < gain.mean < 70.0  # the reduction of the geometric mean ratio
    assert gain.low < 0.0 < gain.high < 100.0
    assert "(-52.8 % to +90.8 %, 97.5 %, 3 rounds)" in str(gain)


def test_a_minimised_metric_gains_its_reduction() -> None:
    """Latency halved in every round is a +50 % gain (as the search reports it), doubled -100 %;
    a throughput doubled +100 %; an asymmetric interval prints both ends."""
    assert paired_gain([-5.0, -6.0, -4.0], [-10.0, -12.0, -8.0]).mean == pytest.approx(50.0)
    assert paired_gain([-20.0, -24.0], [-10.0, -12.0]).mean == pytest.approx(-100.0)
    assert paired_gain([20.0, 24.0], [10.0, 12.0]).mean == pytest.approx(100.0)
    wide = paired_gain([200.0, 150.0, 260.0], [100.0, 100.0, 100.0])
    assert wide.high - wide.mean > wide.mean - wide.low  # wider above than below
    assert str(wide).startswith(f"{wide.mean:+.1f} % ({wide.low:+.1f} % to {wide.high:+.1f} %")


def test_scores_already_in_percent_keep_their_differences() -> None:
    """Several metrics make a score that is already a gain in % of the baseline's mean (it can
    be 0 or negative): the gain is the mean difference in points, its interval symmetric."""
    gain = paired_gain([12.0, 9.0, 10.5], [0.5, -1.0, 0.0], relative=False)
    assert gain.mean == pytest.approx(10.5 - (-0.5 / 3))
    assert gain.high - gain.mean == pytest.approx(gain.mean - gain.low)
    assert " ± " in str(gain)


def test_a_reading_of_zero_keeps_a_figure() -> None:
    """A candidate that read 0 in a round has no log ratio: the rounds' relative differences
    stand in, and the figure stays finite."""
    gain = paired_gain([0.0, 100.0, 100.0], [100.0, 100.0, 100.0])
    assert gain.mean == pytest.approx(-100.0 / 3)
    assert gain.low < gain.mean < gain.high
