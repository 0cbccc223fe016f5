"""`kill -9` of a run that launched its workload (a server started with the trial's flags and
environment): `hone restore` stops the server and closes the run, though no knob of the
project has an original to put back (flags and environment die with the process)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from hone.journal import Journal


def make_project(folder: Path) -> Path:
    """A launched `sleep` that writes its pid, tuned through one environment variable."""
    project = {
        "name": "launched",
        "workload": {"process": {"command": ["sh", "-c", "echo $$ > server.pid; exec sleep 600"]}},
        "knobs": {"threads": {"type": "int", "range": [1, 8], "default": 2, "env": "THREADS"}},
        # long enough that the kill lands in the baseline, before a trial restarts the server
        "benchmark": {"command": "sleep 10; echo score: 1", "timeout": 20},
        "metrics": {"score": {"pattern": r"score: (\S+)", "direction": "maximize"}},
        "tuning": {"engine": "random", "budget": 20, "baseline": 1, "seed": 1},
    }
    path = folder / "hone.yaml"
    path.write_text(yaml.safe_dump(project))
    return path


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_restore_stops_the_server_a_killed_run_launched(
    tmp_path: Path, hone_home: Path, hone_cli
) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "hone", "tune", str(make_project(tmp_path)), "--no-why"],
        env={**os.environ, "HONE_HOME": str(hone_home)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    pid_file = tmp_path / "server.pid"
    try:
        deadline = time.monotonic() + 60
        while not pid_file.exists() or not pid_file.read_text().strip():
            assert time.monotonic() < deadline and proc.poll() is None, "no server launched"
            time.sleep(0.1)
        time.sleep(1)  # in the baseline's benchmark
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    server = int(pid_file.read_text())
    try:
        assert alive(server)  # a kill -9 leaves it serving with the trial's environment
        assert Journal.for_project("launched").unfinished() is not None

        result = hone_cli("restore", "launched")
        assert result.returncode == 0, result.stderr
        assert "stopped, left by a killed run: sh -c" in result.stdout
        deadline = time.monotonic() + 10
        while alive(server) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(server)
        assert Journal.for_project("launched").unfinished() is None  # no warning next time
    finally:
        if alive(server):
            os.kill(server, signal.SIGKILL)
            pytest.fail("the server outlived restore")
