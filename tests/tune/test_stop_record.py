"""A run stopped by Ctrl-C records the study as interrupted even when the trial it cut short
cannot be recorded as failed: the study's state is what `hone studies`, the web UI and a resume
go by, and a study left `running` with its process gone reads as a crash."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from reporters import Notes

from hone.project import load_project
from hone.storage import StudyStore
from hone.storage.store import INTERRUPTED
from hone.tune.records import TuneOptions
from hone.tune.runner import Tuner
from hone.tune.stops import Interrupted


def test_the_state_is_recorded_when_the_cut_trial_cannot_be(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "level.txt").write_text("5\n")
    # the first search trial's benchmark sends this process SIGINT, as Ctrl-C would
    stop = f"kill -INT {os.getpid()}; sleep 5"
    bench = f'if [ "$(cat level.txt)" != 5 ]; then {stop}; fi; echo "score: 1"'
    project = {
        "name": "stop-record",
        "knobs": {
            "level": {
                "type": "int",
                "range": [1, 9],
                "shell": {"get": "cat level.txt", "set": 'echo "$value" > level.txt'},
            }
        },
        "benchmark": {"command": bench, "timeout": 20},
        "metrics": {"score": {"pattern": r"score: (\S+)", "direction": "maximize"}},
        "tuning": {"engine": "random", "budget": 4, "baseline": 1, "seed": 3},
    }
    (tmp_path / "hone.yaml").write_text(yaml.safe_dump(project))

    def refused(self: StudyStore, study: object, reason: str) -> int:
        raise RuntimeError("the database refused the trial's new state")

    monkeypatch.setattr(StudyStore, "fail_running", refused)
    reporter = Notes()
    with pytest.raises(Interrupted):
        Tuner(load_project(tmp_path), reporter, TuneOptions(why=False)).run()

    study = StudyStore().find("stop-record")
    assert study.attrs["state"] == INTERRUPTED
    assert (tmp_path / "level.txt").read_text().strip() == "5"  # the knob is back
    assert reporter.warnings == [
        "the trial cut short could not be recorded: the database refused the trial's new state"
    ]
