"""A study in a database several machines share, looked at from a machine other than the one
that runs it (here: the run is in a pid and UTS namespace of its own, as another machine's
processes and host name are). The pid it records is that machine's: a live run was listed
`running (stale)` (`alive: false`), or alive by a process of this machine that had that pid;
and `hone tune --resume` here failed the running trial under it and went on measuring this
machine into that machine's study."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from forked_hone import run_hone

from hone.storage import StudyStore
from hone.storage.summary import summaries

PROJECT = """name: elsewhere
knobs:
  level: {type: int, range: [1, 9], config: {file: app.conf, format: space, key: level}}
benchmark: {command: 'while [ -e hold ]; do sleep 0.05; done; echo score: 1', timeout: 60}
metrics: {score: {pattern: 'score: (\\S+)', direction: maximize}}
tuning: {engine: random, budget: 1, baseline: 1, seed: 1, apply: never, confirm: {candidates: 0}}
"""


def test_a_study_run_on_another_machine_is_neither_stale_nor_resumed_here(tmp_path: Path) -> None:
    (tmp_path / "app.conf").write_text("level 5\n")
    (tmp_path / "hone.yaml").write_text(PROJECT)
    (tmp_path / "hold").touch()  # the baseline reading waits until this machine has looked
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    # each machine its own HONE_HOME and its own machine-wide folder of setting locks
    other_machine = {"HONE_HOME": tmp_path / "other-home", "HONE_SETTINGS_DIR": tmp_path / "other"}
    env = {**os.environ, **{k: str(v) for k, v in other_machine.items()}}
    tune = f"{sys.executable} -m hone tune {tmp_path} --storage {url} --no-why"
    other = ["unshare", "--pid", "--fork", "--mount-proc", "--uts", "sh", "-c"]
    other += [f"hostname other-box && exec {tune}"]
    run = subprocess.Popen(other, env=env, cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "shared.db").exists() or not StudyStore(url).studies():
            assert run.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        (study,) = summaries(StudyStore(url))
        assert study["state"] == "running" and study["alive"] is None, study  # unknown here
        here = {**os.environ, "HONE_HOME": str(tmp_path / "home")}
        resumed = run_hone("tune", str(tmp_path), "--storage", url, "--resume", "--no-why",
                           env=here, cwd=tmp_path, timeout=60)  # fmt: skip
        assert resumed.returncode == 2, resumed.stdout + resumed.stderr
        assert resumed.stderr == (
            "hone: study elsewhere#1 runs on host other-box: its baseline and trials are that"
            " machine's; resume it there, or start a new study here without --resume\n"
        )
    finally:
        (tmp_path / "hold").unlink()
        out = run.communicate(timeout=60)[0]
    assert run.returncode == 0, out
    assert "0 failed" in out  # its trials were left alone
