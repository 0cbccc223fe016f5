"""A study in a database several machines share, listed from a machine other than the one
that runs it: the pid it records is that machine's, so this one cannot judge it by its own
processes (a live run was listed `running (stale)`, `alive: false`, wherever its pid was not
also a process of the machine that looked)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from started_hone import start_hone

from hone.storage import StudyStore
from hone.storage.summary import summaries

PROJECT = """name: elsewhere
knobs:
  level: {type: int, range: [1, 9], config: {file: app.conf, format: space, key: level}}
benchmark: {command: 'while [ -e hold ]; do sleep 0.05; done; echo score: 1', timeout: 60}
metrics: {score: {pattern: 'score: (\\S+)', direction: maximize}}
tuning: {engine: random, budget: 1, baseline: 1, seed: 1, apply: never, confirm: {candidates: 0}}
"""


def _alive(argv: list[str], env: dict[str, str]) -> object:
    listed = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    (study,) = json.loads(listed.stdout)
    assert study["state"] == "running", study
    return study["alive"]


def test_a_study_run_on_another_machine_is_not_called_stale(tmp_path: Path) -> None:
    (tmp_path / "app.conf").write_text("level 5\n")
    (tmp_path / "hone.yaml").write_text(PROJECT)
    (tmp_path / "hold").touch()  # the baseline reading waits until the listings are made
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    env = {**os.environ, "HONE_HOME": str(tmp_path / "home")}
    run = start_hone("tune", str(tmp_path), "--storage", url, "--no-why", env=env, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "shared.db").exists() or not StudyStore(url).studies():
            assert run.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        (here,) = summaries(StudyStore(url))
        assert here["alive"] is True  # here, its pid is a process of this machine
        # another machine: its own pids (a pid namespace with a /proc of its own)
        studies = [sys.executable, "-m", "hone", "studies", "--storage", url, "--json"]
        other = ["unshare", "--pid", "--fork", "--mount-proc", *studies]
        assert _alive(other, env) is None  # unknown there, not dead
    finally:
        (tmp_path / "hold").unlink()
        run.wait(timeout=60)
    assert run.returncode == 0
