"""Fixtures of the diagnose tests."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hone.diagnose.report import Diagnosis

#: (the CLI's result, the saved diagnosis, the report folder)
Diagnosed = tuple[subprocess.CompletedProcess, Diagnosis, Path]

PROGRAMS = Path(__file__).parent / "programs"


@pytest.fixture(scope="session")
def java_classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every Java program of programs/ compiled into one folder, once: a javac run took 1.5 to
    3 s, and each Java test paid one."""
    assert shutil.which("javac"), "JDK 17 comes from deps/apt-diagnose.txt"
    out = tmp_path_factory.mktemp("java-classes")
    subprocess.run(["javac", "-d", str(out), *map(str, PROGRAMS.glob("*.java"))], check=True)
    return out


def _group(pgid: int) -> list[int]:
    """The live processes of process group `pgid`."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(ProcessLookupError):
                if os.getpgid(int(entry.name)) == pgid:
                    members.append(int(entry.name))
    return members


@pytest.fixture
def start() -> Iterator[Callable[..., subprocess.Popen]]:
    """Start a program for the test, in a process group of its own, and give it `settle`
    seconds (threads start, a JVM compiles). When the test ends every process of each group is
    killed, and gone before the next test starts (a shell's two JVMs had outlived the shell,
    spinning for a minute beside the tests that followed)."""
    started: list[subprocess.Popen] = []

    def run(argv: list[str], settle: float) -> subprocess.Popen:
        started.append(subprocess.Popen(argv, start_new_session=True))
        time.sleep(settle)
        return started[-1]

    yield run
    for program in started:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(program.pid, signal.SIGKILL)
        program.wait()
        deadline = time.monotonic() + 10
        while _group(program.pid) and time.monotonic() < deadline:
            time.sleep(0.05)  # the shell's children, reaped by init


def _leftovers() -> set[Path]:
    return {*Path("/tmp").glob("perf-*.map"), *Path("/tmp").glob(".java_pid*")}


@pytest.fixture(scope="session", autouse=True)
def jvm_leftovers() -> Iterator[None]:
    """The files a killed JVM leaves in /tmp, removed once the tests are done: the perf map jcmd
    had it write (hone leaves a process it attached to its own map) and the socket it opened
    for jcmd's and jstack's attach (.java_pidPID). Only those the tests made, of processes that
    have ended."""
    before = _leftovers()
    yield
    for path in _leftovers() - before:
        pid = path.name.removeprefix(".java_pid").removeprefix("perf-").removesuffix(".map")
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            path.unlink(missing_ok=True)


@pytest.fixture
def diagnose_running(hone_cli, start, tmp_path: Path) -> Callable[..., Diagnosed]:
    """`hone diagnose --pid` of a program started for it (see `start`), with the given options."""

    def run(argv: list[str], settle: float, *options: str) -> Diagnosed:
        program = start(argv, settle)
        folder = tmp_path / "rep"
        done = hone_cli("diagnose", "--pid", str(program.pid), "-o", str(folder), *options)
        assert done.returncode == 0, done.stderr
        return done, Diagnosis.load(folder / "diagnosis.hone"), folder

    return run
