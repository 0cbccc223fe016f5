"""The baseline's noise as reported and stored: a percentage that means something for one
metric and for several combined (a combined score is a gain near zero: its CV is no measure)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
from reporters import Notes

from hone.errors import HoneError
from hone.project import load_project
from hone.storage import StudyStore
from hone.tune.console import Reporter
from hone.tune.records import TuneOptions
from hone.tune.runner import Tuner


class Baseline(Reporter):
    def __init__(self) -> None:
        super().__init__()
        self.cv: float | None = None

    def baseline(
        self, metrics: Mapping[str, float], cv: float, runs: int, gain: Callable[[float], float]
    ) -> None:
        super().baseline(metrics, cv, runs, gain)
        self.cv = cv


def test_two_metrics_report_the_spread_of_their_combined_gain(tmp_path: Path) -> None:
    (tmp_path / "level.txt").write_text("1\n")
    (tmp_path / "hone.yaml").write_text(
        textwrap.dedent(
            """\
            name: noise-two-metrics
            knobs:
              level: {type: int, range: [1, 3], shell: {get: cat level.txt,
                      set: 'echo "$value" > level.txt'}}
            benchmark:
              # readings 100, 101, 102, ...: about 1 % of noise on `a`; `b` does not move
              command: 'n=$(cat n.txt 2>/dev/null || echo 0); echo $((n + 1)) > n.txt;
                        echo "a $((100 + n)) b 50"'
            metrics:
              a: {pattern: 'a (\\d+)', direction: maximize, weight: 50}
              b: {pattern: 'b (\\d+)', direction: maximize, weight: 50}
            tuning: {engine: random, budget: 1, baseline: 3, apply: never, seed: 0,
                     confirm: {candidates: 1, rounds: 2}}
            """
        )
    )
    reporter = Baseline()
    Tuner(load_project(tmp_path / "hone.yaml"), reporter, TuneOptions(why=False)).run()
    # a's readings vary by about 1 %, at half the weight: the gain by well under 2 points (its
    # CV, the spread over a mean of zero, came out as 0 % or as 10^17 %)
    assert reporter.cv is not None and 0.1 < reporter.cv < 2
    store = StudyStore()
    stored = store.find("noise-two-metrics").attrs["baseline_cv"]
    assert stored == reporter.cv


def one_good_baseline_run(folder: Path, name: str) -> Path:
    """A project with one good baseline reading: the benchmark exits 1 from its second run to
    its sixth, so the two failed readings and their three replacements fail alike."""
    (folder / "level.txt").write_text("1\n")
    (folder / "hone.yaml").write_text(
        textwrap.dedent(
            f"""\
            name: {name}
            knobs:
              level: {{type: int, range: [1, 3], shell: {{get: cat level.txt,
                      set: 'echo "$value" > level.txt'}}}}
            benchmark:
              command: 'n=$(($(cat n.txt 2>/dev/null || echo 0) + 1)); echo $n > n.txt;
                        [ $n -ge 2 ] && [ $n -le 6 ] && exit 1; echo "a $((100 + n))"'
            metrics:
              a: {{pattern: 'a (\\d+)', direction: maximize}}
            tuning: {{engine: random, budget: 1, baseline: 3, apply: never, seed: 0,
                     confirm: {{candidates: 1, rounds: 2}}}}
            """
        )
    )
    return folder / "hone.yaml"


def test_one_baseline_run_is_said_to_leave_the_noise_unknown(tmp_path: Path) -> None:
    reporter = Notes()
    project = load_project(one_good_baseline_run(tmp_path, "noise-one-run"))
    Tuner(project, reporter, TuneOptions(why=False)).run()
    # one reading has no spread: its CV of 0 is not a benchmark without noise
    quality = next(n for n in reporter.notes if n.startswith("measurement:"))
    assert quality == (
        "measurement: noise unknown (1 baseline run): no gain is known to be confirmable "
        "before the confirmation's own rounds"
    )


def test_min_detectable_stops_when_the_noise_is_unknown(tmp_path: Path) -> None:
    project = load_project(one_good_baseline_run(tmp_path, "noise-one-run-target"))
    with pytest.raises(HoneError) as stopped:
        Tuner(project, Reporter(), TuneOptions(why=False, min_detectable=3.0)).run()
    assert str(stopped.value).startswith(
        "stopped before any change: 1 of 3 baseline runs succeeded, so the benchmark's noise "
        "is unknown"
    )
    assert (tmp_path / "level.txt").read_text() == "1\n"


def test_a_failed_baseline_reading_is_measured_again(tmp_path: Path, hone_cli) -> None:
    """`baseline: 3` and a benchmark whose second run fails (a flaky client): the baseline,
    its noise and every score rested on the two readings left. The failed one stays recorded
    and a fourth reading takes its place."""
    (tmp_path / "level.txt").write_text("1\n")
    (tmp_path / "hone.yaml").write_text(
        textwrap.dedent(
            """\
            name: flaky-baseline
            knobs:
              level: {type: int, range: [1, 3], shell: {get: cat level.txt,
                      set: 'echo "$value" > level.txt'}}
            benchmark:
              command: 'n=$(($(cat n.txt 2>/dev/null || echo 0) + 1)); echo $n > n.txt;
                        [ $n = 2 ] && echo "connection reset" && exit 1; echo "a $((100 + n))"'
            metrics:
              a: {pattern: 'a (\\d+)', direction: maximize}
            tuning: {engine: random, budget: 1, baseline: 3, apply: never, seed: 0,
                     confirm: {candidates: 1, rounds: 1}}
            """
        )
    )
    result = hone_cli("tune", str(tmp_path), "--no-why")
    assert result.returncode == 0, result.stderr
    study = StudyStore().find("flaky-baseline")
    baseline = [t for t in StudyStore().trials(study) if t.phase == "baseline"]
    assert sorted(t.state for t in baseline) == ["complete", "complete", "complete", "fail"]
    assert "connection reset" in next(t.error for t in baseline if t.state == "fail")
    assert study.attrs["quality"]["runs"] == 3, study.attrs["quality"]
