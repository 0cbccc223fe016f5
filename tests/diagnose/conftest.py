"""Fixtures of the diagnose tests."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from hone.diagnose.report import Diagnosis

#: (the CLI's result, the saved diagnosis, the report folder)
Diagnosed = tuple[subprocess.CompletedProcess, Diagnosis, Path]


@pytest.fixture
def diagnose_running(hone_cli, tmp_path: Path) -> Callable[..., Diagnosed]:
    """`hone diagnose --pid` of a program started for it: `settle` seconds after its start (a
    JVM compiles, threads start), with the given options; the program is stopped afterwards."""

    def run(argv: list[str], settle: float, *options: str) -> Diagnosed:
        program = subprocess.Popen(argv)
        try:
            time.sleep(settle)
            folder = tmp_path / "rep"
            done = hone_cli("diagnose", "--pid", str(program.pid), "-o", str(folder), *options)
        finally:
            program.kill()
            program.wait()
        assert done.returncode == 0, done.stderr
        return done, Diagnosis.load(folder / "diagnosis.hone"), folder

    return run
