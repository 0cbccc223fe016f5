"""The real trial loop, in process, with a scripted optimiser so every failure kind happens:
each failed trial is recorded with its reason, the knobs go back, the study goes on, and at the
end every knob (a real kernel setting among them) is as it was."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import ClassVar

import pytest
from swappiness_project import SWAPPINESS, write_project

from hone.journal import Journal
from hone.optimizers.base import Optimizer, register
from hone.project import load_project
from hone.storage import StudyStore
from hone.tune.console import AtuneReporter, Reporter
from hone.tune.records import TuneOptions
from hone.tune.runner import Tuner

MODES = ["good", "better", "setfail", "startfail", "exit", "timeout", "nometric", "nan", "limit"]


@register
class Scripted(Optimizer):
    """Asks the configurations of `script` in order (a test double for the search only)."""

    name = "scripted-test"
    script: ClassVar[list[dict]] = []

    def ask(self) -> dict:
        index = sum(1 for _ in self.history) - len(self._baseline())
        return dict(self.script[index % len(self.script)])

    def _baseline(self) -> list:
        default = self.space.default()
        return [o for o in self.history if default and o.config == default][:3]


def make_project(tmp_path: Path, swappiness_values: list[int]) -> Path:
    (tmp_path / "mode.txt").write_text("good\n")
    (tmp_path / "level.txt").write_text("3\n")
    (tmp_path / "bench.py").write_text(
        textwrap.dedent("""\
        import sys, time
        mode = open("mode.txt").read().strip()
        level = int(open("level.txt").read())
        if mode == "exit":
            print("boom", file=sys.stderr); sys.exit(3)
        if mode == "timeout":
            time.sleep(30)
        if mode == "nometric":
            print("nothing useful"); sys.exit(0)
        if mode == "nan":
            print("score: nan"); sys.exit(0)
        bonus = {"good": 0, "better": 50, "limit": 80}[mode]
        print(f"score: {100 + bonus + level}")
        print(f"latency: {9 if mode == 'limit' else 1}")
    """)
    )
    mode = {
        "type": "categorical",
        "values": MODES,
        "restart": True,
        "shell": {
            "get": "cat mode.txt",
            "set": 'test "$value" != setfail && printf "%s\\n" "$value" > mode.txt',
        },
    }
    latency = {"pattern": r"latency: (\S+)", "direction": "minimize", "weight": 0, "limit": "<= 5"}
    tuning = {"engine": "scripted-test", "budget": 9, "baseline": 2, "apply": "never",
              "confirm": {"candidates": 2, "rounds": 2}}  # fmt: skip
    return write_project(
        tmp_path, "loop-test", swappiness_values, timeout=2, tuning=tuning,
        workload={"start": 'test "$(cat mode.txt)" != startfail', "stop": "true"},
        knobs={"mode": mode}, metrics={"latency": latency},
    )  # fmt: skip


def test_every_failure_kind_is_recorded_and_knobs_come_back(
    tmp_path: Path, swappiness: int
) -> None:
    other = 10 if swappiness != 10 else 20
    project = load_project(make_project(tmp_path, sorted({swappiness, other})))
    Scripted.script = [{"mode": mode, "level": 5, "swappiness": other} for mode in MODES]
    result = Tuner(project, Reporter(), TuneOptions(why=False)).run()

    store = StudyStore()
    trials = store.trials(store.find("loop-test"))
    search = {t.config["mode"]: t for t in trials if t.phase == "search"}
    assert search["good"].state == "complete" and search["better"].state == "complete"
    reasons = {mode: search[mode].error or "" for mode in MODES}
    assert "knob mode: set 'setfail' failed" in reasons["setfail"]
    assert "workload start failed" in reasons["startfail"]
    assert "benchmark exited 3: boom" in reasons["exit"]
    assert "timed out after 2s" in reasons["timeout"]
    assert "not found" in reasons["nometric"]
    assert "not a finite number" in reasons["nan"]
    assert "limit latency <= 5 broken (9)" in reasons["limit"]
    # The best confirmed candidate is the truly better configuration, but apply=never.
    assert result.best == {"mode": "better", "level": 5, "swappiness": other}
    assert result.gain is not None and result.gain.mean > 40
    assert result.outcome == "restored"
    assert (tmp_path / "mode.txt").read_text().strip() == "good"
    assert (tmp_path / "level.txt").read_text().strip() == "3"
    assert int(SWAPPINESS.read_text()) == swappiness
    assert not Journal.for_project("loop-test").has_changes()


def test_winner_applied_then_restore_puts_everything_back(
    tmp_path: Path, swappiness: int, capsys: pytest.CaptureFixture[str]
) -> None:
    other = 10 if swappiness != 10 else 20
    project = load_project(make_project(tmp_path, sorted({swappiness, other})))
    Scripted.script = [
        {"mode": "better", "level": 9, "swappiness": other},
        {"mode": "good", "level": 1, "swappiness": swappiness},
    ]
    reporter = AtuneReporter()
    result = Tuner(project, reporter, TuneOptions(apply="auto", budget=2, why=False)).run()
    reporter.finish(result)
    assert result.outcome == "applied", result.reason
    assert (tmp_path / "mode.txt").read_text().strip() == "better"
    assert int(SWAPPINESS.read_text()) == other

    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == " Start to benchmark baseline..."
    assert " Current Tuning Progress......(1/2)" in lines
    assert f" The 1th recommand parameters is: mode=better,level=9,swappiness={other}" in lines
    assert any(
        line.startswith(" The 1th evaluation value: (score=159.00,latency=1.00)(") for line in lines
    )
    assert lines[-1] == " Tuning Finished"
    assert " Baseline Performance is: (score=103.00,latency=1.00)" in lines

    outcomes = Journal.for_project("loop-test").restore()
    assert all(o.ok for o in outcomes)
    assert (tmp_path / "mode.txt").read_text().strip() == "good"
    assert (tmp_path / "level.txt").read_text().strip() == "3"
    assert int(SWAPPINESS.read_text()) == swappiness
