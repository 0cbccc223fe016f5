"""A workload run by start and stop commands (a system service) that hone restarted: `hone
restore` puts the originals back and then restarts it, so it runs them, not the trial's values it
read at its last start; one hone ran for itself (`keep_running: false`) is stopped. Before, a
`kill -9` of the run (or a winner applied) left the service running the trial's value while
its file said the original."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from started_hone import start_hone

#: A stand-in for a service: at start it reads app.conf into running.conf and serves until stop.
SERVICE = """\
case "$1" in
start) setsid sh -c 'cp app.conf running.conf; exec sleep 600' > /dev/null 2>&1 &
       echo $! > service.pid ;;
stop)  if [ -f service.pid ]; then kill "$(cat service.pid)"; fi; rm -f service.pid running.conf ;;
esac
"""


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Path]:
    """The service, running its original value (level=5) before hone starts."""
    (tmp_path / "service.sh").write_text(SERVICE)
    (tmp_path / "app.conf").write_text("level=5\n")
    subprocess.run(["sh", "service.sh", "start"], cwd=tmp_path, check=True)
    yield tmp_path
    subprocess.run(["sh", "service.sh", "stop"], cwd=tmp_path, check=False)


def write_project(folder: Path, keep_running: bool, apply: str = "never") -> None:
    project = {
        "name": "service",
        "workload": {"start": "sh service.sh start", "stop": "sh service.sh stop",
                     "ready": "test -s running.conf", "keep_running": keep_running},
        "knobs": {"level": {"type": "int", "range": [1, 9],
                            "config": {"file": "app.conf", "key": "level"}}},
        "benchmark": {"command": "sleep 0.1; sed 's/level=/score: /' running.conf",
                      "timeout": 20},
        "metrics": {"score": {"pattern": r"score: (\S+)", "direction": "maximize"}},
        "tuning": {"engine": "gridsearch", "budget": 9, "baseline": 1, "apply": apply,
                   "confirm": {"candidates": 1, "rounds": 1}},
    }  # fmt: skip
    (folder / "hone.yaml").write_text(yaml.safe_dump(project))


def kill_in_a_trial(folder: Path, hone_home: Path) -> None:
    """Start `hone tune` and SIGKILL it once the service runs a trial's value (not 5)."""
    proc = start_hone(
        "tune",
        str(folder),
        "--no-why",
        env={**os.environ, "HONE_HOME": str(hone_home)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while served(folder) in (None, "", "level=5\n"):
            assert proc.poll() is None, "hone ended before the kill"
            assert time.monotonic() < deadline, "no trial ran"
            time.sleep(0.05)
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # hone alone: the service lives on, as a service does
        proc.wait()


def served(folder: Path) -> str | None:
    running = folder / "running.conf"
    return running.read_text() if running.exists() else None


def test_restore_restarts_a_service_a_killed_run_left_on_a_trial_value(
    service: Path, hone_home: Path, hone_cli
) -> None:
    write_project(service, keep_running=True)
    kill_in_a_trial(service, hone_home)
    assert served(service) not in (None, "level=5\n")  # the trial's value, in the service
    result = hone_cli("restore", "service")
    assert result.returncode == 0, result.stderr
    assert "workload = 'restarted'  ok" in result.stdout
    assert (service / "app.conf").read_text() == "level=5\n"
    assert served(service) == "level=5\n"


def test_restore_stops_the_workload_a_killed_run_started_for_itself(
    service: Path, hone_home: Path, hone_cli
) -> None:
    write_project(service, keep_running=False)
    kill_in_a_trial(service, hone_home)
    assert served(service) not in (None, "level=5\n")
    result = hone_cli("restore", "service")
    assert result.returncode == 0, result.stderr
    assert "workload = 'stopped'  ok" in result.stdout
    # one knob: the workload's line is not counted as one (it said `restored 2 knob(s)`)
    assert result.stdout.splitlines()[-1] == "restored 1 knob(s) of service"
    assert (service / "app.conf").read_text() == "level=5\n"
    assert served(service) is None


def test_restore_after_an_applied_winner_restarts_the_service(service: Path, hone_cli) -> None:
    write_project(service, keep_running=True, apply="always")
    result = hone_cli("tune", str(service), "--no-why")
    assert result.returncode == 0, result.stderr
    assert served(service) == "level=9\n"  # the winner, running
    result = hone_cli("restore", "service")
    assert result.returncode == 0, result.stderr
    assert served(service) == "level=5\n"
