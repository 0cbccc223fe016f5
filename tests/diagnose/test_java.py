"""A Java program with one busy thread among idle ones: the report names that thread, and perf
stacks name its JIT-compiled method through the JVM's perf map."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from hone.diagnose import threads
from hone.diagnose.runtimes import PerfMap


@pytest.mark.slow
def test_report_names_the_busy_java_thread(diagnose_running, java_classes: Path) -> None:
    argv = ["java", "-XX:+PreserveFramePointer", "-cp", str(java_classes), "BusyWorker", "60"]
    # Two seconds first: the JVM starts and compiles the hot loop.
    done, d, folder = diagnose_running(argv, 2.0, "--duration", "2")
    assert d.language == "java"
    busiest = d.threads[0]
    assert busiest.name == "hot-worker"
    assert any("BusyWorker.spin" in frame for frame in busiest.frames)  # from jstack
    idle = [t for t in d.threads if t.name.startswith("idle-worker-")]
    assert len(idle) == 4 and all(t.cpu_pct < 2 for t in idle)
    assert "hot-worker" in d.findings[0].headline or "hot-worker" in d.findings[1].headline
    assert "hot-worker" in done.stdout
    page = (folder / "report.html").read_text()
    assert "hot-worker" in page
    # JIT frames named through jcmd Compiler.perfmap.
    functions = {frame.function for (_, stack) in d.profile.stacks for frame in stack}
    assert any("BusyWorker.spin" in f for f in functions)
    assert any("perf map" in n or "perf-" in n for n in d.notes)


@pytest.mark.slow
def test_every_jvm_under_a_shell_is_named(diagnose_running, java_classes: Path) -> None:
    """Two JVMs started by a shell script (a cluster's brokers, a service's two JVMs): the main
    process is the shell, and each JVM's threads are named by jstack and its JIT frames by its
    own perf map; only the main process's were."""
    java = f"java -XX:+PreserveFramePointer -cp {java_classes} BusyWorker 60"
    done, d, _ = diagnose_running(["sh", "-c", f"{java} & {java} & wait"], 3.0, "--duration", "2")
    assert d.language == "native"
    hot = [t for t in d.threads if t.name == "hot-worker"]
    assert len({t.pid for t in hot}) == 2, d.threads
    assert all(any("BusyWorker.spin" in f for f in t.frames) for t in hot)  # from jstack
    jvms = {t.pid for t in hot}
    functions = {f.function for (_, stack) in d.profile.stacks for f in stack}
    assert any("BusyWorker.spin" in f for f in functions), sorted(functions)[:40]
    mapped = next(n for n in d.notes if "Compiler.perfmap" in n)
    assert all(f"/tmp/perf-{pid}.map" in mapped for pid in jvms), d.notes
    assert any("thread names of 2 of 2 processes" in n for n in d.notes), d.notes
    assert "hot-worker" in done.stdout


@pytest.mark.slow
def test_a_contended_synchronized_block_is_named(diagnose_running, java_classes: Path) -> None:
    """HotSpot parks a thread waiting for a monitor on a condition variable of its own, so the
    futex recording alone saw only per-thread condition waits and no lock finding."""
    argv = ["java", "-XX:+PreserveFramePointer", "-cp", str(java_classes), "MonitorContend", "60"]
    done, d, _ = diagnose_running(argv, 2.0, "--duration", "3")
    assert d.locks is not None
    top = d.locks.contended()[0]
    assert top.kind == "monitor" and top.lock.startswith("java.lang.Object <0x")
    assert top.site.startswith("MonitorContend.lambda$main$0(MonitorContend.java:")
    # by their Java names: the kernel's are all `ledger-poster-t`, cut at 15 characters
    assert len(top.waiters) >= 2, top.waiters
    assert all(re.fullmatch(r"ledger-poster-thread-\d", w) for w in top.waiters), top.waiters
    lock = next(f for f in d.findings if f.kind == "lock")
    assert "java.lang.Object" in lock.headline and "MonitorContend.lambda" in lock.headline
    assert f"verdict: Waiting on lock {top.lock}" in done.stdout or lock.headline in done.stdout


@pytest.mark.slow
def test_a_held_jvm_survives_the_attach_tools(java_classes: Path) -> None:
    """jcmd and jstack attach by SIGQUIT, which ends a JVM that has not yet installed its handler:
    `hone diagnose -- java ...` holds the command stopped while perf starts, and jcmd's signal,
    pending until the release, killed the program (exit 131) before it had run."""
    program = subprocess.Popen(["java", "-cp", str(java_classes), "BusyWorker", "60"])
    try:
        os.kill(program.pid, signal.SIGSTOP)
        perf_map = PerfMap([program.pid])
        names = threading.Thread(target=threads.language_names, args=(program.pid, "java"))
        attach = [threading.Thread(target=perf_map.write), names]
        for thread in attach:
            thread.start()
        time.sleep(2.0)  # jcmd and jstack start (their own JVMs) and try to attach meanwhile
        os.kill(program.pid, signal.SIGCONT)
        for thread in attach:
            thread.join(timeout=60)
        assert program.poll() is None, f"the JVM ended with exit code {program.returncode}"
        assert perf_map.written == {program.pid}
        assert Path(f"/tmp/perf-{program.pid}.map").exists()
    finally:
        program.kill()
        program.wait()
