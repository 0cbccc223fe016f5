"""Go programs: knowing one, and whether it spends its time in its garbage collector.

A Go binary is native code to perf, and a profile of one that allocates hard reads "CPU-bound
in runtime.mallocgc" or in runtime.gcDrain: neither says that the knob is GOGC. Go is known by
its executable: the Go linker writes a build-info blob (`\\xff Go buildinf:`, what `go version
FILE` reads) at the start of the `.go.buildinfo` section, stripped binaries included.

Go's collector runs on the program's own threads (mark workers are goroutines, allocating
goroutines assist the marking, sweeping happens in the background and on allocation), so its
share is read from the on-CPU stacks hone has, not from threads: a sample is the collector's
when a frame of its stack is marking (`runtime.gcBgMarkWorker`, `gcAssistAlloc`, `gcDrain`,
`markroot`, `scanobject`, the write barrier's buffer) or sweeping (`bgsweep`, `sweepone`, the
heap's reclaim, the scavenger); else allocation's when a frame is `runtime.mallocgc` or one of
the runtime's functions that call it (`newobject`, `makeslice`, `growslice`, ...). A `go-gc`
finding needs the collector to hold GC_SHARE of the samples; allocation is evidence beside it
(the allocating callers are what to change)."""

from __future__ import annotations

import re
import struct
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import BinaryIO, NamedTuple

from hone.diagnose.profile import Profile

#: The collector's share of the on-CPU samples from which it is a finding. Measured (3-4 s
#: windows, Go 1.19 and 1.26): a program building linked lists 34-44 % (GOGC=50: 49-51 %,
#: GOGC=400: 21-23 %), a JSON encode/decode loop 18-19 %, fmt.Sprintf and strings.Split into a
#: map 17 %, sorting fresh slices 2-3 %, arithmetic 0 %. While a cycle runs Go's background
#: marking takes a quarter of GOMAXPROCS; beyond that share the collector runs all the time or
#: the allocators assist it.
GC_SHARE = 0.25
#: What the Go linker writes at the start of `.go.buildinfo`.
MAGIC = b"\xff Go buildinf:"
#: The environment variables that steer Go's runtime, as the diagnosis reports them.
SETTINGS = ("GOGC", "GOMEMLIMIT", "GOMAXPROCS")

_MARK = re.compile(
    r"^(runtime\.)?(gcBgMarkWorker|gcBgMarkStartWorkers|gcAssistAlloc|gcDrain|markroot|"
    r"scanobject|scanstack|scanblock|gcMarkDone|gcMarkTermination|gcStart|gcWriteBarrier|"
    r"wbBufFlush)"
)
#: Sweeping and returning memory; `gcenable`'s two goroutines are the sweeper and the scavenger.
_SWEEP = re.compile(
    r"^runtime\.(bgsweep|sweepone|deductSweepCredit|\(\*mheap\)\.reclaim|"
    r"\(\*sweepLocked\)\.sweep|bgscavenge|\(\*pageAlloc\)\.scavenge|gcenable\.)"
)
#: Allocation: mallocgc and its callers in the runtime, which stand for it when perf's frame-
#: pointer walk skips it (a leaf without a frame of its own, as memclrNoHeapPointers, hides
#: its caller: main.build -> runtime.newobject -> runtime.memclrNoHeapPointers).
_ALLOC = re.compile(
    r"^runtime\.(mallocgc|newobject|newarray|makeslice|growslice|makechan|makemap|rawstring|"
    r"rawbyteslice|rawruneslice|convT)"
)


#: ELF32 and ELF64 header fields: where e_shoff is and its format, where e_shentsize, e_shnum
#: and e_shstrndx are, and a section header's name, type, flags, address, offset and size.
_ELF = {1: (32, "I", 46, "IIIIII"), 2: (40, "Q", 58, "IIQQQQ")}


class Section(NamedTuple):
    """Where an ELF section is: its address when loaded, its offset in the file, its size."""

    address: int
    offset: int
    size: int


class Elf(NamedTuple):
    """An ELF file's byte order (struct's `<` or `>`), whether it is 64-bit, its sections."""

    order: str
    wide: bool
    sections: dict[str, Section]


def elf_of(stream: BinaryIO) -> Elf | None:
    """The sections of an open ELF file, from its header, its section table and the table's
    names (a few small reads); None for a file that is no ELF."""
    head = stream.read(64)
    if len(head) < 52 or head[:4] != b"\x7fELF" or head[4] not in _ELF:
        return None
    order = "<" if head[5] == 1 else ">"
    at, offset_format, counts_at, layout = _ELF[head[4]]
    (table_at,) = struct.unpack_from(order + offset_format, head, at)
    size, count, names = struct.unpack_from(order + "HHH", head, counts_at)
    layout = order + layout
    if not table_at or not 0 < count <= 1024 or names >= count or size < struct.calcsize(layout):
        return None
    stream.seek(table_at)
    table = stream.read(size * count)
    headers = [struct.unpack_from(layout, table, i * size) for i in range(count)]
    stream.seek(headers[names][4])
    strings = stream.read(min(headers[names][5], 1 << 16))
    sections = {}
    for name, _, _, address, offset, length in headers:
        end = strings.find(b"\0", name)
        if end > name:
            sections[strings[name:end].decode(errors="replace")] = Section(address, offset, length)
    return Elf(order, head[4] == 2, sections)


def is_go(path: str | Path) -> bool:
    """Whether the file is an ELF executable the Go linker wrote: its `.go.buildinfo` section
    starts with the build-info magic. A few small reads (the header, the section table, their
    names), not the whole binary: 0.1 ms."""
    try:
        with open(path, "rb") as stream:
            elf = elf_of(stream)
            info = elf.sections.get(".go.buildinfo") if elf else None
            if info is None:
                return False
            stream.seek(info.offset)
            return stream.read(len(MAGIC)) == MAGIC
    except (OSError, struct.error):
        return False


def settings(pid: int) -> dict[str, str]:
    """The runtime's variables in the process's environment (GOGC=200, GOMEMLIMIT=1GiB), as
    it started: unset ones are Go's defaults (GOGC 100, no memory limit, a P per CPU)."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return {}
    found = dict(entry.decode(errors="replace").split("=", 1) for entry in environ if b"=" in entry)
    return {name: found[name] for name in SETTINGS if name in found}


def part_of(frames: tuple) -> str:
    """What a sample's stack is doing for memory: `mark`, `sweep`, `alloc` or ``."""
    names = [frame.function for frame in frames]
    if any(_MARK.match(name) for name in names):
        return "mark"
    if any(_SWEEP.match(name) for name in names):
        return "sweep"
    return "alloc" if any(_ALLOC.match(name) for name in names) else ""


def caller(frames: tuple) -> str:
    """The code that asked for memory: the innermost frame outside the runtime above the first
    allocation frame (main.build for main.build -> runtime.newobject -> runtime.mallocgc)."""
    names = [frame.function for frame in frames]
    at = next((i for i, name in enumerate(names) if _ALLOC.match(name)), None)
    if at is None:
        return ""
    return next((name for name in reversed(names[:at]) if not name.startswith("runtime.")), "")


@dataclass
class GoGc:
    """What the on-CPU samples show of Go's collector and allocator (shares of the samples)."""

    mark: float = 0.0
    sweep: float = 0.0
    alloc: float = 0.0
    callers: dict[str, float] = field(default_factory=dict)  # share of the allocating samples
    settings: dict[str, str] = field(default_factory=dict)  # GOGC, GOMEMLIMIT, GOMAXPROCS set
    evidence: bool = False
    verdict: str = ""

    @property
    def share(self) -> float:
        """The collector's share: marking and sweeping."""
        return self.mark + self.sweep

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> GoGc:
        return cls(**data)


def measure(profile: Profile, environment: dict[str, str] | None = None) -> GoGc:
    """The collector's and the allocator's shares of the samples, the allocating callers (of
    allocations and of the marking they were made to assist), the verdict in words."""
    parts = {"mark": 0, "sweep": 0, "alloc": 0}
    callers: dict[str, int] = {}
    for (_, frames), n in profile.stacks.items():
        part = part_of(frames)
        if part:
            parts[part] += n
        who = caller(frames) if part in ("alloc", "mark") else ""
        if who:
            callers[who] = callers.get(who, 0) + n
    total = profile.total or 1
    allocating = sum(callers.values()) or 1
    ranked = sorted(callers.items(), key=lambda kv: -kv[1])[:5]
    gc = GoGc(
        mark=round(parts["mark"] / total, 4),
        sweep=round(parts["sweep"] / total, 4),
        alloc=round(parts["alloc"] / total, 4),
        callers={name: round(n / allocating, 4) for name, n in ranked},
        settings=dict(environment or {}),
    )
    gc.evidence = profile.total > 0 and gc.share >= GC_SHARE
    gc.verdict = _words(gc)
    return gc


def without_gc(profile: Profile) -> Profile:
    """The profile without the collector's and the allocator's samples: the program's own
    code, which a CPU-bound verdict then names."""
    stacks = {key: n for key, n in profile.stacks.items() if not part_of(key[1])}
    return Profile(stacks=stacks, event=profile.event, frequency_hz=profile.frequency_hz,
                   duration_s=profile.duration_s, target=profile.target)  # fmt: skip


def _words(gc: GoGc) -> str:
    """`Go program in garbage collection: 41% of its on-CPU samples in the collector (marking
    33%, sweeping 8%), 24% allocating (runtime.mallocgc); allocating callers main.build 97%;
    GOGC unset (100)`, or why it is no finding."""
    said = (f"{gc.share:.0%} of its on-CPU samples in the collector (marking {gc.mark:.0%}, "
            f"sweeping {gc.sweep:.0%}), {gc.alloc:.0%} allocating (runtime.mallocgc)")  # fmt: skip
    if gc.callers:
        top = ", ".join(f"{name} {share:.0%}" for name, share in list(gc.callers.items())[:3])
        said += f"; allocating callers {top}"
    gogc = gc.settings.get("GOGC")
    said += f"; GOGC={gogc}" if gogc else "; GOGC unset (100)"
    if "GOMEMLIMIT" in gc.settings:
        said += f", GOMEMLIMIT={gc.settings['GOMEMLIMIT']}"
    if gc.evidence:
        return f"Go program in garbage collection: {said}"
    return (f"Little garbage collection: {said}; below {GC_SHARE:.0%} of the samples in the "
            "collector it is no finding")  # fmt: skip
