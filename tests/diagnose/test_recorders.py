"""The window's perf recorders of several processes: perf fails its whole `-p` list when one of
the processes has ended before it opened its events, so a recorder lists them again and starts
once more; a failure that no ended process explains is not tried again."""

from __future__ import annotations

import subprocess
from functools import partial
from pathlib import Path

from hone.diagnose import offcpu, window
from hone.diagnose.jobs import Job, Processes
from hone.diagnose.perf_record import finished


def _run(targets, argv_of, data: Path) -> Job:
    job = window._recorder("offcpu", Processes(), targets, argv_of, data, lambda d: d)
    job.start()
    job.join()
    return job


def test_a_recorder_starts_again_without_the_process_that_ended(tmp_path: Path) -> None:
    alive = subprocess.Popen(["sleep", "30"])
    gone = subprocess.Popen(["true"])
    gone.wait()
    asked: list[float] = []

    def targets(settled: float) -> list[int]:
        asked.append(settled)
        return [alive.pid, gone.pid] if len(asked) == 1 else [alive.pid]

    data = tmp_path / "sched.data"
    try:
        job = _run(targets, partial(offcpu.record_argv, output=data, duration=0.5), data)
    finally:
        alive.kill()
        alive.wait()
    assert job.error is None and job.result == data and finished(data)
    assert asked == [0.0, window.SETTLED]  # the second list without the youngest processes


def test_a_failure_no_ended_process_explains_is_not_tried_again(tmp_path: Path) -> None:
    alive = subprocess.Popen(["sleep", "30"])
    asked: list[float] = []

    def targets(settled: float) -> list[int]:
        asked.append(settled)
        return [alive.pid]

    def argv_of(pids: list[int]) -> list[str]:
        argv = offcpu.record_argv(pids, data, 0.5)
        return [*argv[: argv.index("--")], "-e", "no:such_event", "--", "sleep", "0.5"]

    data = tmp_path / "sched.data"
    try:
        job = _run(targets, argv_of, data)
    finally:
        alive.kill()
        alive.wait()
    assert asked == [0.0]
    assert str(job.error).startswith("perf record failed: "), job.error
    assert "tried" not in str(job.error)
