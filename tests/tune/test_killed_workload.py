"""`kill -9` of a run that launched its workload (a server started with the trial's flags and
environment): `hone restore` stops the server and closes the run, though no knob of the
project has an original to put back (flags and environment die with the process)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from killed_before_record import run_and_die_at_the_record
from started_hone import start_hone

from hone.errors import BenchmarkError
from hone.journal import Journal
from hone.project.model import Workload
from hone.workload.launch import LaunchSpec
from hone.workload.manager import WorkloadManager


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
    proc = start_hone(
        "tune",
        str(make_project(tmp_path)),
        "--no-why",
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


def left_running(text: str) -> list[int]:
    """Live processes whose command line holds `text`."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text in cmdline.read_bytes().decode(errors="replace") and alive(
                int(cmdline.parent.name)
            ):
                found.append(int(cmdline.parent.name))
        except OSError:
            continue
    return found


def test_no_server_runs_when_hone_dies_before_its_record(tmp_path: Path, hone_home: Path) -> None:
    """A launched server is recorded under its pid, so only after it has started; a server
    started before a kill and never recorded would be out of restore's reach. It waits behind
    the gate until the record is written: hone dies right before that, and nothing serves."""
    pid_file = tmp_path / "server.pid"
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from hone.project.model import Workload\n"
        "from hone.workload.launch import LaunchSpec\n"
        "from hone.workload.manager import WorkloadManager\n"
        f"script = 'echo $$ > {pid_file}; exec sleep 600'\n"
        "workload = Workload(launch=LaunchSpec(['sh', '-c', script]))\n"
        "WorkloadManager(workload, Path(sys.argv[1]), Path(sys.argv[1])).start()\n"
    )
    try:
        run_and_die_at_the_record(code, hone_home, str(tmp_path))
        time.sleep(1)  # long after the server, had it run, wrote its pid
        assert not pid_file.exists()
        assert left_running(str(pid_file)) == []  # nor is its gate left waiting
    finally:  # on a failure: the server (exec'd: its pid is in the file) and its gate
        leftover = left_running(str(pid_file))
        if pid_file.exists() and pid_file.read_text().strip():
            leftover.append(int(pid_file.read_text()))
        for pid in leftover:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_a_launched_program_that_cannot_start_is_named(tmp_path: Path, hone_home: Path) -> None:
    """The server starts behind a shell gate, whose exec would fail only after the start: hone
    checks the program first, with the server's PATH and working directory."""
    (tmp_path / "bin").mkdir()
    server = tmp_path / "bin" / "hone-test-server"
    server.write_text("#!/bin/sh\necho $$ > server.pid\nexec sleep 600\n")
    server.chmod(0o644)

    def start(argv: list[str], env: dict[str, str] | None = None) -> WorkloadManager:
        workload = Workload(launch=LaunchSpec(argv, env=env or {}, stop_signal="KILL"))
        manager = WorkloadManager(workload, tmp_path, tmp_path)
        manager.start()
        return manager

    with pytest.raises(BenchmarkError) as missing:
        start(["no-such-server", "--port", "1"])
    assert str(missing.value) == "cannot start no-such-server: No such file or directory"
    with pytest.raises(BenchmarkError) as refused:
        start(["bin/hone-test-server"])
    assert str(refused.value) == "cannot start bin/hone-test-server: Permission denied"
    with pytest.raises(BenchmarkError) as unlisted:
        start(["hone-test-server"])
    assert str(unlisted.value) == "cannot start hone-test-server: No such file or directory"
    assert not list((hone_home / "running").glob("*.json"))

    server.chmod(0o755)  # found through the server's own PATH, relative to its folder
    manager = start(["hone-test-server"], env={"PATH": f"bin:{os.environ['PATH']}"})
    try:
        manager.wait_ready()
        assert len(list((hone_home / "running").glob("*.json"))) == 1
        deadline = time.monotonic() + 5
        while not (tmp_path / "server.pid").exists():
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
    finally:
        manager.stop()
    assert not list((hone_home / "running").glob("*.json"))
