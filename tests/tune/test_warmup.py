"""Warm-up: the first reading after the workload (re)started is compared with the other
readings of its configuration; a slow outlier is left out (phase `warmup`) and measured again."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from hone.tune.warmup import outlier

UP = {"rps": "maximize"}


def test_a_slow_first_reading_is_a_warmup_and_noise_is_not() -> None:
    assert outlier({"rps": 50.0}, [{"rps": 100.0}, {"rps": 98.0}], UP)
    assert outlier({"rps": 95.0}, [{"rps": 100.0}, {"rps": 98.0}], UP) is None  # within 10 %
    assert outlier({"rps": 150.0}, [{"rps": 100.0}, {"rps": 98.0}], UP) is None  # faster
    assert outlier({"rps": 50.0}, [{"rps": 100.0}], UP) is None  # one other reading: no rule
    # noisy others: 80 is worse than all and 20 % below the median, but within 3 scaled MADs
    assert outlier({"rps": 80.0}, [{"rps": 100.0}, {"rps": 120.0}, {"rps": 90.0}], UP) is None
    latency = {"ms": "minimize"}
    assert outlier({"ms": 30.0}, [{"ms": 10.0}, {"ms": 10.5}, {"ms": 9.8}], latency)
    assert outlier({"ms": 5.0}, [{"ms": 10.0}, {"ms": 10.5}], latency) is None


def test_the_warmup_line_gives_figures_as_people_write_them() -> None:
    # memcached-sized figures read "tps=4.12e+04 against 5.287e+04" before
    found = outlier({"tps": 41200.0}, [{"tps": 53738.0}, {"tps": 52000.0}], {"tps": "maximize"})
    assert found == "tps=41,200 against 52,869 for the next 2 readings"


def _project(folder: Path) -> Path:
    """A workload whose first benchmark run after each start is slow (a cold cache), and a
    knob that needs a restart."""
    (folder / "hone.yaml").write_text(
        textwrap.dedent("""\
        name: warm
        workload:
          start: rm -f "$HONE_WORKDIR/warm"
          stop: "true"
        knobs:
          size:
            type: int
            range: [1, 4]
            restart: true
            shell:
              get: cat "$HONE_WORKDIR/size" 2>/dev/null || echo 1
              set: echo $value > "$HONE_WORKDIR/size"
        benchmark: >-
          if [ -f "$HONE_WORKDIR/warm" ]; then echo "rps 100"; else
          touch "$HONE_WORKDIR/warm"; echo "rps 40"; fi
        metrics: {rps: {pattern: 'rps ([0-9]+)', direction: maximize}}
        tuning: {budget: 2, baseline: 3, engine: random, seed: 1, apply: never,
                 confirm: {candidates: 1, rounds: 2}}
        """)
    )
    return folder


def test_the_first_baseline_reading_after_a_restart_is_left_out(hone_cli, tmp_path: Path) -> None:
    run = hone_cli("tune", str(_project(tmp_path)), "--no-why")
    assert run.returncode == 0, run.stderr
    assert "warm-up reading after a restart (rps=40 against 100" in run.stdout
    shown = json.loads(hone_cli("show", "warm", "--json").stdout)
    # (a reading the busy machine disturbed is measured again: phase disturbed, left aside)
    baseline = [t for t in shown["trials"] if t["phase"] in ("baseline", "warmup")]
    assert [t["phase"] for t in baseline] == ["warmup", "baseline", "baseline", "baseline"]
    assert baseline[0]["metrics"]["rps"] == 40 and baseline[0]["number"] == 0
    assert all(t["metrics"]["rps"] == 100 for t in baseline[1:])
    attrs = shown["study"]["attrs"]
    assert attrs["baseline_metrics"]["rps"] == 100  # the warm-up is out of the statistics
    assert attrs["baseline_cv"] == 0
    assert attrs["result"]["warmup"] == 1
    assert "left out as a warm-up" in hone_cli("show", "warm").stdout
