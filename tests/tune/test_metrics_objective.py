"""Metric extraction ($out semantics, safe for any output), objective maths, confirmation stats."""

from __future__ import annotations

import math
import os

import pytest

from hone.errors import BenchmarkError
from hone.project.model import Limit, Metric
from hone.tune.metrics import extract
from hone.tune.objective import Objective
from hone.tune.stats import noise, paired_gain

HOSTILE = 'it\'s $HOME `touch /tmp/hone-pwned` $(touch /tmp/hone-pwned) "quoted"\n'


def atune(command: str) -> Metric:
    return Metric("tps", "maximize", command=command)


def test_out_is_substituted_safely_whatever_it_holds(tmp_path) -> None:
    output = HOSTILE * 3 + "TPS: 1234.5\n"
    value = extract(atune("echo '$out' | grep 'TPS' | awk '{print $2}'"), output, cwd=tmp_path)
    assert value == 1234.5
    assert not (tmp_path / "hone-pwned").exists()
    assert not os.path.exists("/tmp/hone-pwned")


def test_the_output_is_handed_over_in_memory_not_in_a_file(tmp_path) -> None:
    """A hone killed while the command runs leaves no copy of the benchmark's output behind."""
    where = atune('readlink "$HONE_OUT_FILE" | grep -c "^/memfd:hone-out "')
    assert extract(where, "TPS: 1\n", cwd=tmp_path) == 1


def test_out_of_megabytes(tmp_path) -> None:
    output = ("x" * 200 + "\n") * 20_000 + "Requests/sec: 38495.51\n"  # about 4 MB
    metric = atune("echo \"$out\" | grep Requests/sec | awk '{print $2}'")
    assert extract(metric, output, cwd=tmp_path) == pytest.approx(38495.51)


def test_pattern_takes_the_last_match() -> None:
    metric = Metric("tps", "maximize", pattern=r"tps = ([0-9.]+)")
    assert extract(metric, "tps = 1.0\nprogress\ntps = 3348.52 (without)\n") == 3348.52


@pytest.mark.parametrize(
    ("command", "words"),
    [
        ("echo", "no value"),
        ("echo not-a-number", "is not a number"),
        ("exit 3", "exited 3"),
        ("echo nan", "not a finite number"),
    ],
)
def test_bad_metric_output_is_a_failed_trial(command: str, words: str) -> None:
    with pytest.raises(BenchmarkError, match=words):
        extract(atune(command), "whatever")


def test_missing_pattern_fails_naming_the_pattern_as_written_and_the_output() -> None:
    with pytest.raises(BenchmarkError) as failed:
        extract(Metric("tps", "maximize", pattern=r"TPS: (\d+)"), "starting\nnothing here\n\n")
    assert str(failed.value) == (
        r"metric tps: pattern 'TPS: (\d+)' not found; the output's last line: nothing here"
    )
    with pytest.raises(BenchmarkError, match=r"the output was empty$"):
        extract(Metric("tps", "maximize", pattern=r"TPS: (\d+)"), " \n")


def test_single_metric_score_is_signed_value() -> None:
    latency = Objective([Metric("lat", "minimize", pattern="(x)")])
    assert latency.score({"lat": 5.0}) == -5.0
    assert latency.gain(-4.0, -5.0) == pytest.approx(20.0)


def test_weighted_metrics_and_limits() -> None:
    metrics = [
        Metric("tps", "maximize", pattern="(x)", weight=3),
        Metric("lat", "minimize", pattern="(x)", weight=1),
        Metric("p99", "minimize", pattern="(x)", weight=0, limit=Limit.parse("<= 5")),
    ]
    objective = Objective(metrics)
    objective.set_baseline([{"tps": 100, "lat": 10, "p99": 4}, {"tps": 100, "lat": 10, "p99": 4}])
    # +10 % tps (weight 3) and +20 % latency improvement (weight 1): (30 + 20) / 4
    assert objective.score({"tps": 110, "lat": 8, "p99": 4}) == pytest.approx(12.5)
    assert objective.violations({"tps": 110, "lat": 8, "p99": 7}) == ["limit p99 <= 5 broken (7)"]
    assert objective.violations({"tps": 110, "lat": 8, "p99": 5}) == []


def test_paired_gain_cancels_drift() -> None:
    # The machine slows down round after round; the candidate stays 10 % better within rounds.
    baseline = [100.0, 80.0, 60.0, 90.0]
    candidate = [110.0, 88.0, 66.0, 99.0]
    gain = paired_gain(candidate, baseline)
    assert gain.mean == pytest.approx(10.0)
    assert gain.half_width == pytest.approx(0.0, abs=1e-9)
    assert gain.significant


def test_paired_gain_within_noise_is_not_significant() -> None:
    gain = paired_gain([101.0, 97.0, 103.0], [100.0, 100.0, 100.0])
    assert not gain.significant
    assert "95 %" in str(gain)
    assert paired_gain([None, 5.0], [1.0, None]).rounds == 0
    assert math.isclose(noise([10.0, 10.0]), 0.0)


def test_differences_that_agree_by_chance_do_not_make_a_narrow_interval() -> None:
    """Three rounds at +18.0, +18.5, +17.5 % say ± 2 % by themselves; the baseline's readings
    over the study vary by 9 %, so the pooled interval is what those rounds can resolve."""
    baseline = [100.0, 100.0, 100.0]
    candidate = [118.0, 118.5, 117.5]
    alone = paired_gain(candidate, baseline, level=97.5)  # the planned look's level
    assert alone.half_width < 2.5 and alone.significant
    pooled = paired_gain(candidate, baseline, level=97.5, baseline_noise=(9.0, 5))
    assert pooled.mean == alone.mean
    # log ratios' variance pooled with 2 log(1 + 0.09^2) on 5 + 2 degrees of freedom: the
    # interval runs from -1 % to +40 %, which does not exclude zero
    assert -2.0 < pooled.low < 0.0 < 35.0 < pooled.high < 45.0 and not pooled.significant
    # differences noisier than the baseline keep their own, wider interval
    noisy = paired_gain([150.0, 100.0, 110.0], baseline, baseline_noise=(1.0, 5))
    assert noisy.half_width == pytest.approx(
        paired_gain([150.0, 100.0, 110.0], baseline).half_width
    )
