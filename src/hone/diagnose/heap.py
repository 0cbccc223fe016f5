"""The evidence for transparent huge pages: a large heap, or many page faults.

Huge pages pay off when the TLB misses on a large working set, or when a process keeps touching
fresh memory (one fault per 2 MB instead of one per 4 kB). TLB misses need hardware counters,
which virtual machines rarely expose: hone then says so and uses what any machine shows, the
process's anonymous memory (/proc/PID/smaps_rollup: Anonymous, AnonHugePages) at the end of the
window and its page faults over the window (/proc/PID/stat minflt and majflt, the count perf's
`page-faults` software event gives). Below both thresholds hone suggests no huge-page knob: for
a small heap they change nothing but latency spikes from compaction."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

#: Anonymous memory from which a heap counts as large (a TLB of a few thousand 4 kB entries
#: covers a few MB; a gigabyte is hundreds of times that).
LARGE_HEAP = 1 << 30
#: Page faults per second from which faulting in fresh memory is a cost of its own
#: (10,000 faults/s of 4 kB pages is 40 MB/s of new memory).
MANY_FAULTS = 10_000.0


@dataclass
class Faults:
    at: float
    minor: int
    major: int


@dataclass
class Heap:
    """What the window showed, and whether it points to huge pages (`verdict`, in words)."""

    anonymous: int = 0  # bytes
    anon_huge: int = 0  # bytes already in transparent huge pages
    rss: int = 0  # bytes
    faults_per_s: float = 0.0
    tlb: str = ""  # what is known of TLB misses
    evidence: bool = False
    verdict: str = ""

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Heap:
        return cls(**data)


def faults(pid: int) -> Faults | None:
    """The process's page faults so far (all its threads), or None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(errors="replace").rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return Faults(time.monotonic(), int(fields[7]), int(fields[9]))


def memory(pid: int) -> dict[str, int]:
    """Rss, Anonymous and AnonHugePages of the process in bytes (empty when unreadable)."""
    try:
        lines = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
    except OSError:
        return {}
    found = {}
    for line in lines[1:]:
        key, _, rest = line.partition(":")
        words = rest.split()
        if words and words[0].isdigit():
            found[key] = int(words[0]) * 1024
    return found


def counted(pid: int) -> dict[str, int]:
    """Rss and Anonymous of the process in bytes from the kernel's counters (/proc/PID/status:
    VmRSS, RssAnon), without smaps_rollup's walk of its page tables; empty when unreadable."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return {}
    keys = {"VmRSS": "Rss", "RssAnon": "Anonymous"}
    found = {}
    for line in lines:
        key, _, rest = line.partition(":")
        words = rest.split()
        if key in keys and words and words[0].isdigit():
            found[keys[key]] = int(words[0]) * 1024
    return found


class Watch:
    """The memory and faults of the recorded processes over the window, sampled now and then:
    a command may exit when the window ends, so each process's largest heap seen and its last
    fault count are kept. A server's work is in its workers and backends (nginx, PostgreSQL),
    not in its master, which had the heap line to itself: `0.00 GiB of anonymous memory, 0
    page faults/s` for a postmaster whose backends faulted 3,449 times a second under pgbench.
    So the heap is the sum of the processes' (each one's peak), and the faults are theirs,
    those there at the start from their counts then, those `follow` adds (born in the window)
    from zero; /proc/PID/stat's own counts hold no child's, so none is counted twice.
    smaps_rollup walks the process's page tables (43 ms for a 2 GB heap here), so only the
    main process is read there (its huge pages too); the others' anonymous and resident
    memory come from the kernel's counters in /proc/PID/status (RssAnon, VmRSS: 0.03 ms)."""

    def __init__(self, pids: int | list[int]) -> None:
        pids = [pids] if isinstance(pids, int) else pids
        self.main = pids[0] if pids else 0
        self.started = time.monotonic()
        self.first = {pid: f for pid in pids if (f := faults(pid))}
        self.last = dict(self.first)
        self.peaks: dict[int, dict[str, int]] = {}
        self.sample()

    def follow(self, pids: list[int]) -> None:
        for pid in pids:
            self.first.setdefault(pid, Faults(time.monotonic(), 0, 0))

    def sample(self) -> None:
        self.at = time.monotonic()
        for pid in self.first:
            mem = memory(pid) if pid == self.main else counted(pid)
            if mem.get("Anonymous", 0) >= self.peaks.get(pid, {}).get("Anonymous", 0):
                self.peaks[pid] = mem
            self.last[pid] = faults(pid) or self.last.get(pid, self.first[pid])

    def result(self, counters: bool) -> Heap:
        mem: dict[str, int] = {}
        for peak in self.peaks.values():
            for key, size in peak.items():
                mem[key] = mem.get(key, 0) + size
        if not self.first:
            return measure(mem, None, None, counters)
        firsts, lasts = list(self.first.values()), [self.last[pid] for pid in self.first]
        ended = max(f.at for f in lasts)
        before = Faults(self.started, sum(f.minor for f in firsts), sum(f.major for f in firsts))
        after = Faults(ended, sum(f.minor for f in lasts), sum(f.major for f in lasts))
        return measure(mem, before, after, counters)


def measure(mem: dict[str, int], before: Faults | None, after: Faults | None,
            counters: bool) -> Heap:  # fmt: skip
    """The heap (`memory` of the process) and the fault rate between two readings; `counters`
    says whether the machine has hardware counters (else TLB misses cannot be counted, and hone
    says so)."""
    heap = Heap(
        anonymous=mem.get("Anonymous", 0),
        anon_huge=mem.get("AnonHugePages", 0),
        rss=mem.get("Rss", 0),
        tlb=(
            "TLB misses not counted (hardware counters exist, but hone does not read dTLB events)"
            if counters
            else "TLB misses cannot be counted here (no hardware counters)"
        ),
    )
    if before and after and after.at > before.at:
        done = (after.minor + after.major) - (before.minor + before.major)
        heap.faults_per_s = round(done / (after.at - before.at), 1)
    large = heap.anonymous >= LARGE_HEAP
    faulting = heap.faults_per_s >= MANY_FAULTS
    said = (
        f"{_gib(heap.anonymous)} of anonymous memory ({_gib(heap.anon_huge)} in huge pages), "
        f"{heap.faults_per_s:,.0f} page faults/s; {heap.tlb}"
    )
    heap.evidence = large or faulting
    if large:
        heap.verdict = f"Large heap: {said}"
    elif faulting:
        heap.verdict = f"Many page faults: {said}"
    else:
        heap.verdict = (
            f"Small heap and few page faults: {said}; below {_gib(LARGE_HEAP)} and "
            f"{MANY_FAULTS:,.0f} faults/s huge pages have nothing to win"
        )
    return heap


def _gib(size: int) -> str:
    return f"{size / (1 << 30):.2f} GiB"
