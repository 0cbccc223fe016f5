"""A launched server that cannot keep running (its port held by another memcached: the
system's own, or one a killed run left) must not let the other server be measured in its
place: that one answers the ready probe and the benchmark alike."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import yaml
from started_hone import start_hone

from hone.errors import BenchmarkError
from hone.project import load_project
from hone.tune.console import Reporter
from hone.tune.records import TuneOptions
from hone.tune.runner import Tuner


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stats_pid(port: int) -> str:
    """The pid of the memcached that answers on `port`, as memcstat reports it."""
    out = subprocess.run(
        ["memcstat", f"--servers=127.0.0.1:{port}"], capture_output=True, text=True, timeout=10
    ).stdout
    return next(line.split()[1] for line in out.splitlines() if line.strip().startswith("pid:"))


def make_project(folder: Path, port: int) -> Path:
    """memcached launched on a fixed port, tuned by its thread count; the benchmark's figure is
    the pid of the server that answered."""
    project = {
        "name": "port-taken",
        "workload": {
            "process": {
                "command": ["memcached", "-l", "127.0.0.1", "-p", str(port), "-u", "root"],
                "stop_signal": "KILL",
            },
            "ready": f"memcstat --servers=127.0.0.1:{port}",
            "ready_timeout": 5,
        },
        "knobs": {"threads": {"type": "int", "range": [1, 4], "default": 2, "flag": "-t"}},
        "benchmark": {"command": f"sleep 0.2; memcstat --servers=127.0.0.1:{port}", "timeout": 10},
        "metrics": {"pid": {"pattern": r"pid: (\d+)", "direction": "maximize"}},
        # one candidate, one round: the score is a pid, noise to the confirmation, which
        # would go on to its most rounds (a restart each), and nothing asserts on it
        "tuning": {
            "engine": "random",
            "budget": 1,
            "baseline": 2,
            "confirm": {"candidates": 1, "rounds": 1},
        },
    }
    path = folder / "hone.yaml"
    path.write_text(yaml.safe_dump(project))
    return path


def test_a_server_that_exits_on_a_taken_port_fails_the_reading(tmp_path: Path) -> None:
    port = free_port()
    other = subprocess.Popen(["memcached", "-l", "127.0.0.1", "-p", str(port), "-u", "root"])
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                assert stats_pid(port) == str(other.pid)
                break
            except (StopIteration, AssertionError, subprocess.SubprocessError):
                assert time.monotonic() < deadline, "the other memcached did not start"
                time.sleep(0.1)
        project = load_project(str(make_project(tmp_path, port)))
        tuner = Tuner(project, Reporter(), TuneOptions(why=False))
        try:
            tuner.run()
        except BenchmarkError as exc:
            error = str(exc)
        else:
            error = "measured"
        # the launched memcached could not listen: each baseline reading failed, saying why,
        # instead of measuring the other server
        assert error.startswith("every baseline run failed; the last: workload exited with code")
        assert "Address already in use" in error
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_a_run_after_a_kill_9_stops_the_server_the_killed_run_left(
    tmp_path: Path, hone_home: Path
) -> None:
    port = free_port()
    project_file = make_project(tmp_path, port)
    killed = start_hone(
        "tune",
        str(project_file),
        "--no-why",
        env={**os.environ, "HONE_HOME": str(hone_home)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:  # the killed run's memcached answers
            try:
                left = int(stats_pid(port))
                break
            except (StopIteration, subprocess.SubprocessError):
                assert time.monotonic() < deadline and killed.poll() is None, "no server"
                time.sleep(0.1)
    finally:
        killed.kill()
        killed.wait()
    try:
        warnings: list[str] = []
        reporter = Reporter()
        reporter.warn = warnings.append  # type: ignore[method-assign]
        options = TuneOptions(why=False, max_repeats=2)  # a close call: two rounds at most
        result = Tuner(load_project(str(project_file)), reporter, options).run()
        assert warnings[0].startswith("stopped, left by a killed run: memcached")
        # every reading measured the run's own server, none the one left behind
        assert result.baseline_metrics["pid"] != left
        assert not Path(f"/proc/{left}").exists() or " Z " in Path(f"/proc/{left}/stat").read_text()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(left, signal.SIGKILL)  # left behind if the run did not stop it
