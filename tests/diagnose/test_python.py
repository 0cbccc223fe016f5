"""A Python program with one busy thread: py-spy names it in the hot-thread table."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"


@pytest.mark.slow
def test_report_names_the_busy_python_thread(diagnose_running) -> None:
    argv = [sys.executable, str(PROGRAMS / "spin_threads.py"), "60"]
    done, d, folder = diagnose_running(argv, 0.5, "--duration", "1.5", "--no-locks")
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
    assert "hot-spinner" in (folder / "report.html").read_text()
    assert "hot-spinner" in done.stdout
