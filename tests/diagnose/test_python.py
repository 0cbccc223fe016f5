"""A Python program with one busy thread: py-spy names it in the hot-thread table."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from hone.diagnose.report import Diagnosis

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


@pytest.mark.slow
def test_a_wrapper_that_execs_python_is_diagnosed_as_python(hone_cli, tmp_path: Path) -> None:
    """hone holds a command right after its first exec: a wrapper's (pyenv's `python3` shim is
    a bash script), so the program it then exec'd was diagnosed as native code, without py-spy:
    'CPU-bound in function _PyEval_EvalFrameDefault of module libpython3.11.so.1.0'."""
    script = (
        f"exec {shlex.quote(sys.executable)} {shlex.quote(str(PROGRAMS / 'spin_threads.py'))} 3"
    )
    folder = tmp_path / "rep"
    done = hone_cli("diagnose", "-o", str(folder), "--no-locks", "--", "sh", "-c", script)
    assert done.returncode == 0, done.stderr
    d = Diagnosis.load(folder / "diagnosis.hone")
    assert d.language == "python"
    assert d.threads[0].name == "hot-spinner"
    assert d.language_profile is not None and d.language_profile.total > 0
    cpu = next(f for f in d.findings if f.kind == "cpu")
    assert "function spin of module spin_threads.py" in cpu.headline


def test_a_wrapper_that_execs_python_late_is_diagnosed_as_python(hone_cli, tmp_path: Path) -> None:
    """The runtime was looked for once, half a second into the window: a wrapper that takes
    longer before its exec (kafka-server-start.sh builds its class path, pyenv's shim forks 40
    processes and took over 0.5 s on a busy machine) got 'CPU-bound in function [python3.11] of
    module python3.11', no py-spy."""
    program = "import time\ndef spin(t):\n    while time.time() - t < 0.6: pass\nspin(time.time())"
    script = f"sleep 0.7; exec {shlex.quote(sys.executable)} -c {shlex.quote(program)}"
    folder = tmp_path / "rep"
    done = hone_cli("diagnose", "-o", str(folder), "--no-locks", "--no-offcpu", "--", "sh", "-c",
                    script)  # fmt: skip
    assert done.returncode == 0, done.stderr
    d = Diagnosis.load(folder / "diagnosis.hone")
    assert d.language == "python", done.stdout
    # py-spy started on it (whether it sampled the 0.6 s spin depends on the machine's load)
    assert "py-spy" in [c.name for c in d.capabilities.items if c.used], done.stdout


@pytest.mark.slow
def test_the_workers_of_a_python_parent_are_sampled_by_py_spy(diagnose_running) -> None:
    """A pre-fork server's parent only waits; the work is in its workers. py-spy of the parent
    alone had no busy thread to sample, so the finding named the interpreter's loop
    (_PyEval_EvalFrameDefault of libpython) instead of the Python function."""
    argv = [sys.executable, str(PROGRAMS / "prefork.py"), "60"]
    done, d, folder = diagnose_running(argv, 1.0, "--duration", "2", "--no-locks", "--no-offcpu")
    assert d.language == "python" and len(d.processes) == 3
    profile = d.language_profile
    assert profile is not None and profile.total > 0
    # the busiest two threads: one in each worker (the parent may be caught awake once or twice)
    workers = {thread.rpartition("-")[2] for thread in list(profile.threads())[:2]}
    assert len(workers) == 2 and workers <= set(map(str, d.processes)) - {str(d.pid)}, (
        profile.threads()
    )
    worker = min(workers)
    functions = {f.function for (_, frames) in profile.stacks for f in frames}
    assert "crunch" in functions
    cpu = next(f for f in d.findings if f.kind == "cpu")
    assert "function crunch of module prefork.py" in cpu.headline
    busiest = d.threads[0]  # named by py-spy dump, the parent's children too
    assert busiest.name == "MainThread" and busiest.frames[0].startswith("crunch ("), busiest
    assert "function crunch" in done.stdout
    assert f"MainThread-{worker}" in (folder / "report.html").read_text()


@pytest.mark.slow
def test_the_python_programs_of_a_shell_are_sampled(hone_cli, tmp_path: Path) -> None:
    """A shell script that starts Python programs (workers, a supervisor's children): the main
    process is the shell, whose Python children were left to perf alone, so the threads had no
    Python names and the verdict named the interpreter's loop (_PyEval_EvalFrameDefault)."""
    worker = f"{shlex.quote(sys.executable)} {shlex.quote(str(PROGRAMS / 'shell_worker.py'))} 30"
    folder = tmp_path / "rep"
    done = hone_cli("diagnose", "-o", str(folder), "--duration", "3", "--no-locks", "--no-offcpu",
                    "--", "sh", "-c", f"{worker} & {worker} & wait")  # fmt: skip
    assert done.returncode == 0, done.stderr
    d = Diagnosis.load(folder / "diagnosis.hone")
    assert d.language == "python"
    hot = [t for t in d.threads if t.name == "hot-worker"]  # named by py-spy dump
    assert len({t.pid for t in hot}) == 2, d.threads
    assert all(t.frames and t.frames[0].startswith("churn_for_the_shell (") for t in hot), hot
    assert any("thread names of 2 of 2 processes" in n for n in d.notes), d.notes
    profile = d.language_profile
    assert profile is not None and profile.total > 0
    # two processes' samples in one profile, each thread naming its process (the busiest two:
    # a main thread may be caught awake once or twice)
    busiest = set(list(profile.threads())[:2])
    assert busiest == {f"hot-worker-{t.pid}" for t in hot}, profile.threads()
    cpu = next(f for f in d.findings if f.kind == "cpu")
    assert "function churn_for_the_shell of module shell_worker.py" in cpu.headline
    spy = d.capabilities.get("py-spy")
    assert spy is not None and spy.used, spy
    assert "Python stacks (py-spy)" in (folder / "report.html").read_text()
