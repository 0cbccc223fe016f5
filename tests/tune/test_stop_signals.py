"""SIGTERM (systemd's stop, `kill`) in the middle of a trial stops the run: every knob put back,
the study recorded as interrupted, exit code 143. A repeated signal does not cut that short."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from started_hone import Process, start_hone, wait_for_study

from hone.journal import Journal
from hone.storage import StudyStore
from hone.tune.records import CUT_OFF
from hone.tune.stops import check_stop, stop_on_signals

SET = 'sleep 0.5; echo "$value" > level.txt'


def make_project(folder: Path, set_command: str = SET) -> Path:
    """level starts at 5; its set command takes half a second (so a restore takes as long)."""
    (folder / "level.txt").write_text("5\n")
    project = {
        "name": "stop-test",
        "knobs": {
            "level": {
                "type": "int",
                "range": [1, 9],
                "shell": {"get": "cat level.txt", "set": set_command},
            }
        },
        "benchmark": {"command": 'sleep 0.5; echo "score: $(cat level.txt)"', "timeout": 20},
        "metrics": {"score": {"pattern": r"score: (\S+)", "direction": "maximize"}},
        "tuning": {"engine": "random", "budget": 12, "baseline": 1, "seed": 1},
    }
    path = folder / "hone.yaml"
    path.write_text(yaml.safe_dump(project))
    return path


def start_tune(project: Path, hone_home: Path) -> Process:
    return start_hone(
        "tune",
        str(project),
        "--no-why",
        env={**os.environ, "HONE_HOME": str(hone_home)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_search(proc: Process) -> None:
    """Return once a search trial is running (its set command and its benchmark take half a
    second each)."""
    wait_for_study(
        proc,
        "stop-test",
        lambda trials: any(t.phase == "search" and t.state == "running" for t in trials),
        60,
        "the search",
    )


def stopped_run(
    tmp_path: Path,
    hone_home: Path,
    signals: int,
    set_command: str = SET,
    before=lambda: None,
    sent: signal.Signals = signal.SIGTERM,
) -> tuple[int, str, list]:
    """Start a run, send SIGTERM (or `sent`) `signals` times a quarter second apart in a search
    trial (`before` called first); the exit code, stderr and the study's trials."""
    proc = start_tune(make_project(tmp_path, set_command), hone_home)
    try:
        wait_for_search(proc)
        before()
        for _ in range(signals):
            proc.send_signal(sent)
            time.sleep(0.25)
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    store = StudyStore()
    study = store.find("stop-test")
    assert study.state == "interrupted"
    return proc.returncode, stderr, store.trials(study)


def test_sigterm_in_a_trial_stops_the_run_and_puts_every_knob_back(
    tmp_path: Path, hone_home: Path
) -> None:
    code, stderr, trials = stopped_run(tmp_path, hone_home, signals=1)
    assert code == 143, stderr
    assert stderr.strip().splitlines()[-1] == "hone: stopped by SIGTERM; every knob put back"
    assert (tmp_path / "level.txt").read_text().strip() == "5"
    # the run stopped in its first search trial: no trial came after the signal, and that
    # one is recorded as cut off, not left running
    search = [t for t in trials if t.phase == "search"]
    assert [(t.state, t.error) for t in search] == [("fail", CUT_OFF)]
    assert not Journal.for_project("stop-test").has_changes()


def test_ctrl_c_in_a_trial_says_the_knobs_are_back(tmp_path: Path, hone_home: Path) -> None:
    code, stderr, _ = stopped_run(tmp_path, hone_home, signals=1, sent=signal.SIGINT)
    assert code == 130, stderr
    assert stderr.strip().splitlines()[-1] == "hone: interrupted; every knob put back"
    assert (tmp_path / "level.txt").read_text().strip() == "5"
    assert not Journal.for_project("stop-test").has_changes()


def test_a_repeated_sigterm_does_not_cut_the_restore_short(tmp_path: Path, hone_home: Path) -> None:
    # the second lands while the first's restore runs the half-second set command
    code, stderr, _ = stopped_run(tmp_path, hone_home, signals=2)
    assert code == 143, stderr
    assert "every knob put back" in stderr
    assert (tmp_path / "level.txt").read_text().strip() == "5"
    assert not Journal.for_project("stop-test").has_changes()


def test_a_stopped_run_that_cannot_put_a_knob_back_says_so(tmp_path: Path, hone_home: Path) -> None:
    blocked = tmp_path / "blocked"
    set_command = f"test -e {blocked} && exit 1; {SET}"
    code, stderr, _ = stopped_run(tmp_path, hone_home, 1, set_command, before=blocked.touch)
    assert code == 143, stderr
    last = stderr.strip().splitlines()[-1]
    assert last == "hone: stopped by SIGTERM; knobs not all put back: `hone restore stop-test`"
    assert Journal.for_project("stop-test").has_changes()  # kept for that restore


class SignalledWhileFinalised:
    """An object whose finaliser is running when a SIGINT is handled, as a finished Popen's
    `__del__` may be between two trials: Python drops an exception raised in a finaliser."""

    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        sum(range(10_000))  # Python code, between whose steps the handler runs


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_ctrl_c_lost_in_a_finaliser_still_stops_the_run_at_its_next_reading() -> None:
    try:
        SignalledWhileFinalised()  # Python's own handler: its KeyboardInterrupt is dropped
    except KeyboardInterrupt:
        pytest.fail("this Python does not drop an interrupt raised in a finaliser")
    with stop_on_signals():
        SignalledWhileFinalised()  # dropped again
        with pytest.raises(KeyboardInterrupt):
            check_stop()  # what every reading asks first
    check_stop()  # outside a run nothing is remembered
