"""A JVM whose live set sits near its -Xmx is diagnosed as garbage collection, with the
collector's share of the samples, its collections and the heap's fill as evidence; a busy JVM
that allocates little is not. The counters come from the JVM's own perf-data file."""

from __future__ import annotations

import contextlib
import html
import json
import os
import struct
import subprocess
import time
from pathlib import Path

import pytest
from forked_hone import run_hone

from hone.diagnose import jvmgc
from hone.diagnose.report import Diagnosis

#: The two JVMs diagnosed (heap, program, --duration): near its heap limit (a 50 MB live set in
#: a 64 MB heap, replaced at random: the collector never stops) and busy but allocating little.
RUNS = {
    "churn": ("-Xmx64m", ["HeapChurn", "60", "50"], "3"),
    "busy": ("-Xmx96m", ["BusyWorker", "60"], "2"),
}


@pytest.fixture(scope="module")
def diagnosed(
    java_classes: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[subprocess.CompletedProcess, Diagnosis, Path]]:
    """`hone diagnose --pid` of each of RUNS, one after the other (not beside each other), made
    once for the module: the verdict tests and --compare read the same two diagnoses."""
    root = tmp_path_factory.mktemp("jvmgc")
    env = {**os.environ, "HONE_HOME": str(root / "home"), "COLUMNS": "200"}
    done = {}
    for name, (heap, argv, seconds) in RUNS.items():
        program = subprocess.Popen(["java", heap, "-cp", str(java_classes), *argv])
        try:
            time.sleep(1.5)  # the JVM starts and compiles
            folder = root / name
            run = run_hone(
                "diagnose", "--pid", str(program.pid), "-o", str(folder), "--duration", seconds,
                env=env, cwd=Path.cwd(), timeout=300,
            )  # fmt: skip
        finally:
            program.kill()
            program.wait()
        assert run.returncode == 0, run.stderr
        done[name] = run, Diagnosis.load(folder / "diagnosis.hone"), folder
    return done


@pytest.mark.slow
def test_a_jvm_near_its_heap_limit_is_diagnosed_as_gc(diagnosed, hone_cli) -> None:
    done, d, folder = diagnosed["churn"]
    assert d.gc is not None and d.gc.evidence and d.gc.counters
    assert d.findings[0].kind == "gc", [f.headline for f in d.findings]
    assert d.gc.gc_share >= jvmgc.GC_SHARE
    assert any(name.startswith(("GC Thread#", "VM Thread")) for name in d.gc.gc_threads)
    assert sum(count for count, _ in d.gc.collections.values()) > 10
    assert d.gc.near_limit and abs(d.gc.heap_max - (64 << 20)) < 1024, d.gc.heap_max
    assert "-Xmx64m" in d.gc.args
    assert "verdict: JVM in garbage collection: " in done.stdout
    assert "the heap is near its limit" in done.stdout and "advice: " in done.stdout
    assert "raise -Xmx" in done.stdout
    # the application's code is not the collector's: no GC thread named as its busiest
    cpu = [f for f in d.findings if f.kind == "cpu"]
    assert all("GC Thread" not in f.headline for f in cpu)
    assert "JVM in garbage collection" in (folder / "report.html").read_text()
    shown = hone_cli("diagnose", "--from", str(folder), "--json")
    body = json.loads(shown.stdout)
    assert body["findings"][0]["kind"] == "gc" and body["gc"]["evidence"] is True


@pytest.mark.slow
def test_a_busy_jvm_that_allocates_little_is_no_gc_finding(diagnosed) -> None:
    done, d, _ = diagnosed["busy"]
    assert "gc" not in d.kinds
    assert d.gc is not None and d.gc.counters and not d.gc.evidence
    assert d.gc.gc_share < jvmgc.GC_SHARE and d.gc.pause_share < jvmgc.PAUSE_SHARE
    assert "gc: Little garbage collection: " in done.stdout


def _created(pid: int, timeout: float = 30) -> Path | None:
    """The JVM's perf-data file once the JVM is created: sun.rt.createVmEndTime is set at the
    end of its start-up (under 0.1 s here), after the heap and its collectors have their
    counters."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        path = jvmgc.perfdata_path(pid)
        if path is not None:
            with contextlib.suppress(OSError, ValueError, struct.error):  # still being laid out
                if jvmgc.read_perfdata(path).get("sun.rt.createVmEndTime", 0):
                    return path
        time.sleep(0.02)
    return None


@pytest.mark.slow
@pytest.mark.parametrize("collector", ["-XX:+UseG1GC", "-XX:+UseSerialGC"])
def test_the_heap_maximum_is_read_from_the_jvm(start, java_classes: Path, collector: str) -> None:
    """G1 lets each generation grow to the whole heap, Serial splits it: both are -Xmx."""
    program = start(["java", collector, "-Xmx96m", "-cp", str(java_classes), "BusyWorker", "60"], 0)
    path = _created(program.pid)
    assert path is not None
    found = jvmgc.reading(jvmgc.read_perfdata(path))
    assert abs(found.max - (96 << 20)) < 1024, found
    assert found.collectors and "-Xmx96m" in found.args


@pytest.mark.slow
def test_compare_sets_the_collectors_figures_side_by_side(hone_cli, diagnosed,
                                                          tmp_path: Path) -> None:  # fmt: skip
    """--compare of a JVM near its heap limit against a busy one that allocates little: the
    collector's share, its collections, its pauses and the heap's fill, before and after, in
    the terminal's lines, the JSON's runtime rows and the report's table alike."""
    (_, churn_run, churn_folder), (_, busy_run, busy_folder) = (
        diagnosed["churn"], diagnosed["busy"]
    )  # fmt: skip
    churn, busy = churn_run.gc, busy_run.gc
    assert churn and churn.counters and busy and busy.counters
    argv = ["diagnose", "--compare", str(churn_folder), str(busy_folder)]
    text = hone_cli(*argv, "-o", str(tmp_path / "cmp.html"))
    assert text.returncode == 0, text.stderr
    rows = dict(line.split(": ", 1) for line in text.stdout.splitlines() if ": " in line)
    share = rows["GC % of on-CPU samples"].split(" -> ")
    assert share == [f"{100 * churn.gc_share:.1f}", f"{100 * busy.gc_share:.1f}"]
    assert float(share[0]) >= 100 * jvmgc.GC_SHARE > float(share[1])
    made = rows["GC collections"].split(" -> ")
    assert int(made[0].split()[0].rstrip(",")) == churn.counts()[0] > 10
    assert made[0].endswith("/s") and made[1].startswith(f"{busy.counts()[0]}")
    assert rows["GC pauses % of the window"] == (
        f"{100 * churn.pause_share:.1f} -> {100 * busy.pause_share:.1f}"
    )
    heap = rows["heap used / max"].split(" -> ")
    assert heap[0].endswith(f" / 64 MB ({churn.heap_used / churn.heap_max:.0%})")
    assert " / 96 MB (" in heap[1]
    assert float(heap[0].split()[0]) > float(heap[1].split()[0])
    as_json = json.loads(hone_cli(*argv, "--json", "-o", str(tmp_path / "j.html")).stdout)
    runtime = {r["name"]: f"{r['before']} -> {r['after']}" for r in as_json["runtime"]}
    names = ("GC % of on-CPU samples", "GC collections", "GC pauses % of the window",
             "heap used / max")  # fmt: skip
    assert {n: runtime[n] for n in names} == {n: rows[n] for n in names}
    page = (tmp_path / "cmp.html").read_text()
    for name in names:
        before, after = (html.escape(cell) for cell in rows[name].split(" -> "))
        assert f"<td>{html.escape(name)}</td><td>{before}</td><td>{after}</td>" in page


@pytest.mark.slow
def test_of_two_jvms_under_a_shell_the_one_collecting_is_named(
    start, hone_cli, java_classes: Path, tmp_path: Path
) -> None:
    """A shell that starts a busy JVM and one near its heap limit: the main process is no JVM,
    yet each JVM's counters are read and the verdict names the one that paused most."""
    java = f"java -cp {java_classes}"
    shell = start(["sh", "-c", f"{java} -Xmx96m BusyWorker 60 & "
                               f"{java} -Xmx64m HeapChurn 60 50 & wait"], 2.0)  # fmt: skip
    children = Path(f"/proc/{shell.pid}/task/{shell.pid}/children").read_text().split()
    churn = next(
        int(p) for p in children if b"HeapChurn" in Path(f"/proc/{p}/cmdline").read_bytes()
    )
    done = hone_cli(
        "diagnose", "--pid", str(shell.pid), "-o", str(tmp_path / "d"), "--duration", "3"
    )
    assert done.returncode == 0, done.stderr
    d = Diagnosis.load(tmp_path / "d" / "diagnosis.hone")
    assert d.language == "native"
    assert d.gc is not None and d.gc.counters and d.gc.evidence, d.gc
    assert d.gc.pid == churn and abs(d.gc.heap_max - (64 << 20)) < 1024
    assert f"JVM pid {churn} in garbage collection: " in done.stdout
    assert "gc" in d.kinds
