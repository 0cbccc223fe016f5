"""A service a killed run started for itself, on that run's port (HONE_PORT): the next run
starts its own on another port, and used to leave the killed run's serving for good (its stop
command reaches the new port only). It is stopped first, with the killed run's commands."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from started_hone import start_hone

from hone.project import load_project
from hone.tune.console import Reporter
from hone.tune.records import TuneOptions
from hone.tune.runner import Tuner

STATS = "memcstat --servers=127.0.0.1:$HONE_PORT"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pid_on(port: int) -> int | None:
    """The pid of the memcached answering on `port`, None if none does."""
    out = subprocess.run(
        ["memcstat", f"--servers=127.0.0.1:{port}"], capture_output=True, text=True, timeout=10
    ).stdout
    return next((int(line.split()[1]) for line in out.splitlines() if "pid:" in line), None)


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def make_project(folder: Path) -> Path:
    """memcached as a daemon on the run's port, stopped through that port (as `redis-cli -p
    $HONE_PORT shutdown` would), its thread count a knob in a file."""
    (folder / "threads.txt").write_text("2\n")
    project = {
        "name": "service-left",
        "workload": {
            "start": "memcached -d -l 127.0.0.1 -p $HONE_PORT -u root -t $(cat threads.txt)",
            "stop": f"p=$({STATS} | awk '/pid:/ {{print $2}}'); "
            '[ -z "$p" ] || kill -9 "$p"; sleep 0.2',
            "ready": STATS,
            "ready_timeout": 5,
        },
        "knobs": {
            "threads": {
                "type": "int",
                "range": [1, 4],
                "shell": {"get": "cat threads.txt", "set": 'echo "$value" > threads.txt'},
                "restart": True,
            }
        },
        "benchmark": {"command": f"sleep 0.2; {STATS} | grep -q pid && echo score: 1"},
        "metrics": {"score": {"pattern": r"score: (\d+)", "direction": "maximize"}},
        # one candidate, one round (each reading restarts the service): the test is about
        # what the run does at its start and its end
        "tuning": {
            "engine": "random",
            "budget": 1,
            "baseline": 1,
            "apply": "never",
            "confirm": {"candidates": 1, "rounds": 1},
        },
    }
    path = folder / "hone.yaml"
    path.write_text(yaml.safe_dump(project))
    return path


def test_a_run_after_a_kill_9_stops_the_service_the_killed_run_started(
    tmp_path: Path, hone_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project_file = make_project(tmp_path)
    first, second = free_port(), free_port()
    killed = start_hone(
        "tune",
        str(project_file),
        "--no-why",
        env={**os.environ, "HONE_HOME": str(hone_home), "HONE_PORT": str(first)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    left = None
    try:
        deadline = time.monotonic() + 30
        while left is None:
            assert time.monotonic() < deadline and killed.poll() is None, "no service"
            time.sleep(0.1)
            left = pid_on(first)
    finally:
        killed.kill()
        killed.wait()
    try:
        assert alive(left)
        warnings: list[str] = []
        reporter = Reporter()
        reporter.warn = warnings.append  # type: ignore[method-assign]
        monkeypatch.setenv("HONE_PORT", str(second))
        options = TuneOptions(why=False, max_repeats=2)  # a close call: two rounds at most
        Tuner(load_project(project_file), reporter, options).run()
        assert "stopped the workload a killed run had started" in warnings
        assert not alive(left)
        assert pid_on(second) is None  # and this run stopped its own
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(left, signal.SIGKILL)
