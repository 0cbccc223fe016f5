"""A JVM whose live set sits near its -Xmx is diagnosed as garbage collection, with the
collector's share of the samples, its collections and the heap's fill as evidence; a busy JVM
that allocates little is not. The counters come from the JVM's own perf-data file."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from hone.diagnose import jvmgc

PROGRAMS = Path(__file__).parent / "programs"


@pytest.fixture
def classes(tmp_path: Path) -> Path:
    """HeapChurn and BusyWorker compiled into a folder of their own."""
    assert shutil.which("javac"), "JDK 17 comes from deps/apt-diagnose.txt"
    out = tmp_path / "classes"
    out.mkdir()
    sources = [str(PROGRAMS / name) for name in ("HeapChurn.java", "BusyWorker.java")]
    subprocess.run(["javac", "-d", str(out), *sources], check=True)
    return out


@pytest.mark.slow
def test_a_jvm_near_its_heap_limit_is_diagnosed_as_gc(diagnose_running, hone_cli,
                                                      classes: Path) -> None:  # fmt: skip
    # a 50 MB live set in a 64 MB heap, replaced at random: the collector never stops
    argv = ["java", "-Xmx64m", "-cp", str(classes), "HeapChurn", "60", "50"]
    done, d, folder = diagnose_running(argv, 1.5, "--duration", "3")
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
def test_a_busy_jvm_that_allocates_little_is_no_gc_finding(diagnose_running,
                                                           classes: Path) -> None:  # fmt: skip
    argv = ["java", "-cp", str(classes), "BusyWorker", "60"]
    done, d, _ = diagnose_running(argv, 1.5, "--duration", "2")
    assert "gc" not in d.kinds
    assert d.gc is not None and d.gc.counters and not d.gc.evidence
    assert d.gc.gc_share < jvmgc.GC_SHARE and d.gc.pause_share < jvmgc.PAUSE_SHARE
    assert "gc: Little garbage collection: " in done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("collector", ["-XX:+UseG1GC", "-XX:+UseSerialGC"])
def test_the_heap_maximum_is_read_from_the_jvm(start, classes: Path, collector: str) -> None:
    """G1 lets each generation grow to the whole heap, Serial splits it: both are -Xmx."""
    program = start(["java", collector, "-Xmx96m", "-cp", str(classes), "BusyWorker", "60"], 1.0)
    path = jvmgc.perfdata_path(program.pid)
    assert path is not None
    found = jvmgc.reading(jvmgc.read_perfdata(path))
    assert abs(found.max - (96 << 20)) < 1024, found
    assert found.collectors and "-Xmx96m" in found.args
