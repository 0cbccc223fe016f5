"""The baseline's noise as reported and stored: a percentage that means something for one
metric and for several combined (a combined score is a gain near zero: its CV is no measure)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path

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
