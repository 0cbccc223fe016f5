"""A worker's result that comes after the study gave its trial up (failed as lost by another
worker once the lease ran out) is dropped: the trial is failed in the study, and the worker's
own summary counts it failed too. It used to say `(0 failed)` beside a trial table, and study
counts, with that trial failed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

#: What another worker does when a trial's lease runs out: fail it as lost.
GIVE_UP = """
import os
from hone.storage import StudyStore
from hone.storage.lease import running_trials

store = StudyStore(os.environ["DROP_DB"])
study = store.find("dropped")
for trial in running_trials(store, study.study_id):
    store.fail_trial(trial.trial_id, "worker w2 gave it up: no heartbeat", lost=True)
"""


def test_a_dropped_result_counts_as_failed_in_the_workers_summary(
    tmp_path: Path, hone_cli, monkeypatch
) -> None:
    url = f"sqlite:///{tmp_path / 'studies.db'}"
    monkeypatch.setenv("DROP_DB", url)
    (tmp_path / "give_up.py").write_text(GIVE_UP)
    (tmp_path / "app.conf").write_text("level=5\n")
    # run 1 is the baseline; during run 2, the first search trial, the study gives it up
    benchmark = (
        "n=$(($(cat runs 2>/dev/null || echo 0) + 1)); echo $n > runs; "
        f'if [ $n = 2 ]; then "{sys.executable}" give_up.py; fi; '
        "sed -n 's/^level=/score: /p' app.conf"
    )
    project = {
        "name": "dropped",
        "knobs": {
            "level": {
                "type": "int",
                "range": [1, 9],
                "config": {"file": "app.conf", "key": "level", "restart": False},
            }
        },
        "benchmark": {"command": benchmark, "timeout": 30},
        "metrics": {"score": {"pattern": r"score: (\S+)", "direction": "maximize"}},
        "tuning": {"engine": "random", "budget": 1, "baseline": 1, "apply": "never",
                   "confirm": {"candidates": 1, "rounds": 1}},
    }  # fmt: skip
    (tmp_path / "hone.yaml").write_text(yaml.safe_dump(project))

    result = hone_cli("worker", str(tmp_path), "--storage", url, "--worker-id", "w1")
    assert result.returncode == 0, result.stderr
    assert "dropped: the study gave this trial up" in result.stderr + result.stdout
    summary = result.stdout.strip().splitlines()[-1]
    assert summary.startswith("worker w1: ") and " trials (1 failed) in " in summary, summary

    shown = json.loads(hone_cli("show", "dropped", "--storage", url, "--json").stdout)
    failed = [t for t in shown["trials"] if t["state"] == "fail"]
    assert [(t["phase"], t["lost"]) for t in failed] == [("search", True)]
    assert shown["study"]["failures"] == 1
    (row,) = json.loads(hone_cli("studies", "--storage", url, "--json").stdout)
    assert row["failures"] == 1
