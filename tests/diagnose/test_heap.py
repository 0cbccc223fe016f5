"""THP only with evidence: a process walking a 1.2 GiB heap gets the huge-page knobs, citing its
heap and saying that TLB misses cannot be counted here; the same program on a 64 MiB heap gets
none. NUMA knobs stay out on a one-node machine."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from benchmarks.diagnose.inputs import build
from hone.diagnose import catalogue, heap
from hone.diagnose.report import Diagnosis

THP = ("transparent_hugepage.enabled", "transparent_hugepage.defrag")


def _diagnose(hone_cli, tmp_path: Path, megabytes: int, *options: str) -> tuple[Diagnosis, str]:
    program = build("heap_walk", tmp_path)
    done = hone_cli(
        "diagnose", "--no-offcpu", "--no-locks", "-o", str(tmp_path / "rep"), *options,
        "--", str(program), str(megabytes), "2",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return Diagnosis.load(tmp_path / "rep" / "diagnosis.hone"), done.stdout


def test_a_large_heap_points_to_huge_pages(hone_cli, tmp_path: Path) -> None:
    d, printed = _diagnose(hone_cli, tmp_path, 1200, "--suggest-project", str(tmp_path / "p"))
    assert d.heap is not None and d.heap.evidence
    assert d.heap.anonymous >= heap.LARGE_HEAP
    assert d.heap.verdict.startswith("Large heap: 1.1") and "no hardware counters" in d.heap.verdict
    assert "Large heap: 1.1" in printed  # a finding: on the verdict or an "also" line
    found = {s.name: s for s in d.suggestions}
    for name in THP:
        assert found[name].present and found[name].evidence.startswith("Large heap: ")
    for name in ("kernel.numa_balancing", "vm.zone_reclaim_mode"):
        assert found[name].present == (catalogue.numa_nodes() > 1)
        if catalogue.numa_nodes() == 1:
            assert "one NUMA node" in found[name].reason

    # a CPU-bound program gets a compiler-flags project, with the huge pages its heap points to
    text = (tmp_path / "p" / "hone.yaml").read_text()
    project = yaml.safe_load(text)
    assert "opt" in project["knobs"] and "transparent_hugepage.enabled" in project["knobs"]
    assert "#   transparent_hugepage.enabled: Large heap: " in text
    assert hone_cli("check", str(tmp_path / "p")).returncode == 0


def test_a_small_heap_gets_no_huge_pages(hone_cli, tmp_path: Path) -> None:
    d, printed = _diagnose(hone_cli, tmp_path, 64)
    assert d.heap is not None and not d.heap.evidence
    assert d.heap.anonymous < heap.LARGE_HEAP and d.heap.faults_per_s < heap.MANY_FAULTS
    assert "heap: Small heap and few page faults" in printed
    assert not any("hugepage" in s.name or "numa" in s.name for s in d.suggestions)
    assert "heap" not in d.kinds


def test_numa_knobs_only_with_several_nodes(monkeypatch) -> None:
    """The rule itself, on one node and on two (the machine's node count replaced)."""
    for nodes, present in ((1, False), (2, True)):
        monkeypatch.setattr(catalogue, "numa_nodes", lambda n=nodes: n)
        found = {s.name: s for s in catalogue.knobs_for(["heap"], {"heap": "Large heap: 2 GiB"})}
        balancing = found["kernel.numa_balancing"]
        assert balancing.present is (present and Path("/proc/sys/kernel/numa_balancing").exists())
        assert balancing.evidence == "Large heap: 2 GiB"


def test_the_heap_is_the_workers_not_only_the_main_process(hone_cli, tmp_path: Path) -> None:
    """A server's memory is in its workers and backends: the heap line was the main process's
    alone (`0.00 GiB of anonymous memory, 0 page faults/s` for a postmaster whose backends
    faulted 3,449 times a second). Here a shell's child fills 200 MiB in the window."""
    child = 'import time; x = b"\\x01" * (200 << 20); time.sleep(1.2)'
    done = hone_cli("diagnose", "--no-offcpu", "--no-locks", "-o", str(tmp_path / "rep"),
                    "--", "sh", "-c", f"{sys.executable} -c '{child}'; true")  # fmt: skip
    assert done.returncode == 0, done.stderr
    d = Diagnosis.load(tmp_path / "rep" / "diagnosis.hone")
    assert d.heap is not None and d.heap.anonymous >= 200 << 20, d.heap
    assert d.heap.faults_per_s > 1000, d.heap  # 51,200 pages of 4 kB (fewer where THP maps them)
