"""A Python program with one busy thread: py-spy names it in the hot-thread table."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from hone.diagnose.report import Diagnosis

PROGRAMS = Path(__file__).parent / "programs"


@pytest.mark.slow
def test_report_names_the_busy_python_thread(hone_cli, tmp_path: Path) -> None:
    program = subprocess.Popen([sys.executable, str(PROGRAMS / "spin_threads.py"), "60"])
    try:
        time.sleep(0.5)
        done = hone_cli(
            "diagnose", "--pid", str(program.pid), "--duration", "1.5", "-o", str(tmp_path / "r"),
            "--no-locks",
        )  # fmt: skip
    finally:
        program.kill()
        program.wait()
    assert done.returncode == 0, done.stderr
    d = Diagnosis.load(tmp_path / "r" / "diagnosis.hone")
    assert d.language == "python"
    busiest = d.threads[0]
    assert busiest.name == "hot-spinner"
    assert busiest.frames and busiest.frames[0].startswith("spin (")
    assert {t.name for t in d.threads} >= {"MainThread", "idle-0", "idle-1", "idle-2"}
    assert d.locks is None
    # Python-level stacks from py-spy name the Python function, not the interpreter loop.
    assert d.language_profile is not None and d.language_profile.total > 0
    threads_sampled = d.language_profile.threads()
    assert next(iter(threads_sampled)) == "hot-spinner"
    functions = {
        (f.function, f.module) for (_, frames) in d.language_profile.stacks for f in frames
    }
    assert ("spin", "spin_threads.py") in functions
    cpu = next(f for f in d.findings if f.kind == "cpu")
    assert "function spin of module spin_threads.py" in cpu.headline
    assert "hot-spinner" in (tmp_path / "r" / "report.html").read_text()
    assert "hot-spinner" in done.stdout
