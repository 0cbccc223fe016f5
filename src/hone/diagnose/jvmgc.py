"""Whether a JVM spends its time collecting garbage: heap pressure, not CPU-bound code.

A JVM whose live set sits near its -Xmx collects without pause: its collector's threads take
the CPUs (and the run queue), the application stops at every pause, and a profile alone reads
"CPU-bound in libjvm.so" or "run queue saturated", neither of which says what to change. Two
measurements tell it apart, both without attaching to the JVM:

- the share of the process's on-CPU samples taken in the collector: threads HotSpot names for it
  (`GC Thread#N`, `G1 Conc#N`, `G1 Main Marker`, `ZWorker#N`, `Shenandoah ...`) and the `VM
  Thread` while it runs a collection (a `VM_...Collect...` operation on its stack: Serial GC
  collects there);
- the JVM's own counters, which it keeps in a shared-memory file (`/tmp/hsperfdata_USER/PID`,
  what jstat reads): collections and their pause time per collector, each generation's used
  and maximum size. They are read at the window's start and every half second after (the JVM
  deletes the file when it exits), so the collections counted are those of the window; a JVM
  started inside the window (a command hone holds) has no file yet at its start, and counts
  from zero. `-XX:-UsePerfData` leaves the samples alone as evidence.

A `gc` finding needs GC to hold GC_SHARE of the on-CPU samples or its pauses PAUSE_SHARE of the
window; the verdict then weighs it (module verdict)."""

from __future__ import annotations

import glob
import re
import struct
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hone.diagnose.profile import Profile
from hone.diagnose.threads import ThreadStat

#: The collector's share of the on-CPU samples from which GC is a finding: a healthy service
#: spends a few percent there.
GC_SHARE = 0.2
#: The share of the window spent in stop-the-world pauses from which GC is a finding.
PAUSE_SHARE = 0.1
#: The heap's fill at the window's end from which it counts as near its limit.
NEAR_LIMIT = 0.8

#: Threads HotSpot starts for its collectors (Linux truncates names to 15 characters).
_GC_THREAD = re.compile(
    r"^(GC Thread#|G1 |Z(Worker|Driver|Director|Stat|Uncommit|Unmap)|Shenandoah|Parallel GC)"
)
#: A VM operation that collects: the VM Thread runs Serial GC's collections and starts G1's.
_GC_OPERATION = re.compile(r"^VM_\w*(Collect|GC|G1|Z|Shenandoah)")


def is_gc_thread(name: str) -> bool:
    """A collector's thread, by its name (perf's folded names have `_` for spaces)."""
    return bool(_GC_THREAD.match(name.replace("_", " ")))


def in_gc(thread: str, frames: tuple) -> bool:
    """Whether an on-CPU sample is the collector's work."""
    if is_gc_thread(thread):
        return True
    return thread.replace("_", " ") == "VM Thread" and any(
        _GC_OPERATION.match(f.function) for f in frames
    )


def without_gc(profile: Profile) -> Profile:
    """The profile without the collector's samples: the application's own code."""
    stacks = {key: n for key, n in profile.stacks.items() if not in_gc(*key)}
    return Profile(stacks=stacks, event=profile.event, frequency_hz=profile.frequency_hz,
                   duration_s=profile.duration_s, target=profile.target)  # fmt: skip


def read_perfdata(path: Path) -> dict[str, int | str]:
    """The counters of a HotSpot perf-data file: name -> number (longs) or text (byte arrays).
    The layout: a prologue (magic 0xcafec0c0, byte order, ..., the first entry's offset and the
    entry count), then entries, each with its length, the offsets of its name and data, its
    vector length and its type (`J` long, `B` bytes)."""
    data = path.read_bytes()
    if len(data) < 32 or data[:4] != b"\xca\xfe\xc0\xc0":
        raise ValueError(f"{path}: not a HotSpot perf-data file")
    order = "<" if data[4] == 1 else ">"
    offset, count = struct.unpack_from(order + "ii", data, 24)
    counters: dict[str, int | str] = {}
    for _ in range(count):
        if offset + 20 > len(data):
            break
        length, name_at, vector, kind, _f, _u, _v, data_at = struct.unpack_from(
            order + "iiicBBBi", data, offset
        )
        if length <= 0:
            break
        start = offset + name_at
        name = data[start : data.index(b"\0", start)].decode(errors="replace")
        if kind == b"J" and vector == 0:
            counters[name] = struct.unpack_from(order + "q", data, offset + data_at)[0]
        elif kind == b"B":
            raw = data[offset + data_at : offset + data_at + vector]
            counters[name] = raw.split(b"\0", 1)[0].decode(errors="replace")
        offset += length
    return counters


def perfdata_path(pid: int) -> Path | None:
    """The JVM's perf-data file, seen through its own root (a JVM in a container names the
    file by its pid there)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(errors="replace")
    except OSError:
        return None
    nspid = next((line.split()[-1] for line in status.splitlines() if line.startswith("NSpid:")),
                 str(pid))  # fmt: skip
    found = glob.glob(f"/proc/{pid}/root/tmp/hsperfdata_*/{nspid}")
    return Path(found[0]) if found else None


@dataclass
class Reading:
    """The JVM's GC counters at one moment."""

    collectors: dict[str, tuple[int, float]]  # name -> (collections, seconds)
    used: int  # bytes in every generation's spaces
    max: int  # the heap's maximum size in bytes
    policy: str
    args: str  # the JVM's options (-Xmx64m ...)


def reading(counters: dict[str, int | str]) -> Reading:
    """GC counts, pause seconds and heap sizes from the perf-data counters. G1 lets each of its
    generations grow to the whole heap (each one's maximum is the heap's); the others split it,
    and their maxima add up."""
    ticks = float(counters.get("sun.os.hrt.frequency", 1e9) or 1e9)
    collectors = {}
    for n in range(8):
        name = counters.get(f"sun.gc.collector.{n}.name")
        if name is None:
            break
        count = int(counters.get(f"sun.gc.collector.{n}.invocations", 0))
        seconds = int(counters.get(f"sun.gc.collector.{n}.time", 0)) / ticks
        collectors[str(name)] = (count, seconds)
    used, maxima = 0, []
    for g in range(4):
        if f"sun.gc.generation.{g}.maxCapacity" not in counters:
            break
        maxima.append(int(counters[f"sun.gc.generation.{g}.maxCapacity"]))
        for s in range(int(counters.get(f"sun.gc.generation.{g}.spaces", 0))):
            used += int(counters.get(f"sun.gc.generation.{g}.space.{s}.used", 0))
    policy = str(counters.get("sun.gc.policy.name", ""))
    heap_max = max(maxima, default=0) if policy.startswith("GarbageFirst") else sum(maxima)
    return Reading(collectors, used, heap_max, policy, str(counters.get("java.rt.vmArgs", "")))


def _read(pid: int) -> Reading | None:
    path = perfdata_path(pid)
    if path is None:
        return None
    try:
        return reading(read_perfdata(path))
    except (OSError, ValueError, struct.error):
        return None


def _pauses(name: str) -> bool:
    """Whether a collector's time is stop-the-world: all but ZGC's and Shenandoah's concurrent
    cycles (G1's "concurrent cycle pauses" are its remark and cleanup pauses)."""
    return "pause" in name.lower() or "cycle" not in name.lower()


@dataclass
class Gc:
    """What the window showed of the JVM's collector, and whether it is a finding (`verdict`)."""

    gc_share: float = 0.0  # of the process's on-CPU samples
    gc_threads: dict[str, float] = field(default_factory=dict)  # thread -> share of samples
    counters: bool = False  # the JVM's perf-data counters were read
    collections: dict[str, list[float]] = field(default_factory=dict)  # name -> [count, s]
    pause_share: float = 0.0  # of the window, stopped for collections
    heap_used: int = 0  # bytes at the window's end
    heap_max: int = 0
    policy: str = ""
    args: str = ""
    evidence: bool = False
    verdict: str = ""
    pid: int = 0  # the JVM the counters are of, where several were recorded (else 0)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Gc:
        return cls(**data)

    def counts(self) -> tuple[int, int, float]:
        """The window's collections, the full ones among them, and their seconds."""
        count = sum(int(c) for c, _ in self.collections.values())
        full = sum(int(c) for name, (c, _) in self.collections.items() if "full" in name.lower())
        return count, full, sum(s for _, s in self.collections.values())

    @property
    def near_limit(self) -> bool:
        return bool(self.heap_max) and self.heap_used >= NEAR_LIMIT * self.heap_max


class Watch:
    """Each JVM's counters at the window's start (or when it was found) and at its last reading
    while it ran: the main process's, and those of the other JVMs recorded (`add`)."""

    def __init__(self, pid: int) -> None:
        # None: no JVM yet (a held command, a JVM just forked), its counters start at 0
        self.first: dict[int, Reading | None] = {pid: _read(pid)}
        self.last = dict(self.first)
        self.at = time.monotonic()

    def add(self, pids: list[int]) -> None:
        for pid in pids:
            if pid not in self.first:
                self.first[pid] = self.last[pid] = _read(pid)

    def sample(self) -> None:
        self.at = time.monotonic()
        for pid, last in self.last.items():
            self.last[pid] = _read(pid) or last

    def result(self, profile: Profile, window: float) -> Gc:
        """The JVM that paused most (of those whose counters were read), its pid named when
        there were several; the collector's share of the samples is every JVM's."""
        read = [pid for pid, last in self.last.items() if last]
        if not read:
            return measure(profile, None, None, window)
        several = len(read) > 1
        found = [measure(profile, self.first[pid], self.last[pid], window, pid if several else 0)
                 for pid in read]  # fmt: skip
        return max(found, key=lambda gc: (gc.pause_share, gc.counts()[0]))


def measure(
    profile: Profile, first: Reading | None, last: Reading | None, window: float, pid: int = 0
) -> Gc:
    """The collector's share of the samples and, from the counters, its collections over the
    window, its pause time and the heap's fill; the verdict in words (naming `pid` if given)."""
    gc = Gc(pid=pid)
    threads: dict[str, int] = {}
    for (thread, frames), n in profile.stacks.items():
        if in_gc(thread, frames):
            name = thread.replace("_", " ")
            threads[name] = threads.get(name, 0) + n
    if profile.total:
        gc.gc_share = sum(threads.values()) / profile.total
        gc.gc_threads = {t: round(n / profile.total, 4)
                         for t, n in sorted(threads.items(), key=lambda kv: -kv[1])}  # fmt: skip
    paused = 0.0
    if last:
        gc.counters = True
        before = first.collectors if first else {}
        for name, (count, seconds) in last.collectors.items():
            was_count, was_seconds = before.get(name, (0, 0.0))
            gc.collections[name] = [count - was_count, round(seconds - was_seconds, 4)]
            if _pauses(name):
                paused += seconds - was_seconds
        gc.pause_share = min(paused / window, 1.0) if window > 0 else 0.0
        gc.heap_used, gc.heap_max, gc.policy, gc.args = last.used, last.max, last.policy, last.args
    gc.evidence = gc.gc_share >= GC_SHARE or gc.pause_share >= PAUSE_SHARE
    gc.verdict = _words(gc)
    return gc


def megabytes(size: int) -> str:
    return f"{size / (1 << 20):,.0f} MB"


def _words(gc: Gc) -> str:
    """`JVM in garbage collection: 93% of its on-CPU samples in the collector (GC Thread#0 36%,
    ...); 457 collections (54 full) took 3.27 s, paused 81% of the window; heap 62 MB used of
    64 MB max (97%, GarbageFirst); the heap is near its limit`, or why it is no finding."""
    top = ", ".join(f"{t} {s:.0%}" for t, s in list(gc.gc_threads.items())[:3])
    said = f"{gc.gc_share:.0%} of its on-CPU samples in the collector"
    said += f" ({top})" if top else ""
    if gc.counters:
        count, full, seconds = gc.counts()
        fulls = f" ({full} full)" if full else ""
        said += (f"; {count} collections{fulls} took {seconds:.2f} s, paused "
                 f"{gc.pause_share:.0%} of the window")  # fmt: skip
        if gc.heap_max:
            policy = f", {gc.policy}" if gc.policy else ""
            said += (f"; heap {megabytes(gc.heap_used)} used of {megabytes(gc.heap_max)} max "
                     f"({gc.heap_used / gc.heap_max:.0%}{policy})")  # fmt: skip
    else:
        said += "; the JVM's GC counters were not readable (hsperfdata: -XX:-UsePerfData?)"
    jvm = f"JVM pid {gc.pid}" if gc.pid else "JVM"
    if gc.evidence:
        near = "; the heap is near its limit" if gc.near_limit else ""
        return f"{jvm} in garbage collection: {said}{near}"
    of = f" (of the JVMs, pid {gc.pid} paused most)" if gc.pid else ""
    return (f"Little garbage collection{of}: {said}; below {GC_SHARE:.0%} of the samples and "
            f"{PAUSE_SHARE:.0%} of the window in pauses it is no finding")  # fmt: skip


def runq(threads: list[ThreadStat]) -> float:
    """The collector's threads' run-queue wait, thread-seconds per second: their demand for
    CPUs, which a saturated run queue otherwise takes for the application's."""
    return sum(t.runq_pct for t in threads if is_gc_thread(t.label)) / 100
