"""Lock waits: user-space futex waits and kernel lock contention, per lock.

User space: sys_enter_futex/sys_exit_futex of the process (task-context tracepoints, so a
per-process recording sees them); a wait lasts from enter to exit of a waiting futex op, and is
charged to the futex word's address, named by the ELF symbol it falls in (a global mutex such as
`counter_lock`) through /proc/PID/maps and `nm`. glibc's contended mutex waits with FUTEX_WAIT and
val 2; condition variables (and idle workers, JVM parking) wait with FUTEX_WAIT_BITSET, so those are
reported apart as "condition waits" rather than contention. Kernel: lock:contention_begin/end
(what `perf lock contention` reads), charged to the first caller outside the locking code."""

from __future__ import annotations

import re
import subprocess
from bisect import bisect_right
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hone.diagnose.offcpu import Span, frame_name
from hone.diagnose.perf_record import scratch_record, timer

if TYPE_CHECKING:
    from hone.diagnose.threads import ThreadStat

FUTEX_ENTER = re.compile(r"uaddr: (0x[0-9a-f]+), op: (0x[0-9a-f]+), val: (0x[0-9a-f]+)")
CONTENTION = re.compile(r"(0x[0-9a-f]+) \(flags=([^)]*)\)")
FUTEX_CMD = {0: "wait", 9: "wait_bitset", 6: "lock_pi", 13: "lock_pi2", 11: "wait_requeue_pi"}
MUTEX_FRAMES = ("lll_lock_wait", "pthread_mutex", "ObjectMonitor::enter", "__lll_lock")
CONDITION_FRAMES = ("pthread_cond", "Parker::park", "ObjectMonitor::wait", "sem_wait", "park")
KERNEL_LOCK_FRAMES = ("lock", "queued_spin", "contention", "__schedule", "schedule", "osq_")


@dataclass
class LockWait:
    """Time threads spent waiting on one lock during the window."""

    lock: str  # symbol name, else the address
    address: str
    kind: str  # mutex, condition, monitor (Java), kernel:<flags>
    wait_ms: float = 0.0
    count: int = 0
    max_ms: float = 0.0
    waiters: list[str] = field(default_factory=list)  # thread names
    site: str = ""  # the caller: first frame outside the locking code
    stack: str = ""  # folded stack of the longest wait
    #: each waiting thread's id and kernel name (`comm`), for `name_waiters`; not saved
    threads: dict[int, str] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k != "threads"}


@dataclass
class Locks:
    window_s: float = 0.0
    user: list[LockWait] = field(default_factory=list)
    kernel: list[LockWait] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    capped: bool = False  # perf stopped at MAX_SIZE: window_s is less than the diagnosis's

    def contended(self) -> list[LockWait]:
        """Real contention (mutexes, kernel locks), longest wait first; condition waits excluded."""
        found = [w for w in self.user if w.kind in ("mutex", "monitor")] + self.kernel
        return sorted(found, key=lambda w: -w.wait_ms)

    def to_dict(self) -> dict:
        return {**asdict(self), "user": [w.to_dict() for w in self.user],
                "kernel": [w.to_dict() for w in self.kernel]}  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict) -> Locks:
        return cls(
            window_s=data.get("window_s", 0.0),
            user=[LockWait(**w) for w in data.get("user", [])],
            kernel=[LockWait(**w) for w in data.get("kernel", [])],
            notes=list(data.get("notes", [])),
            capped=data.get("capped", False),
        )


class Symbolizer:
    """Data addresses of a live process to ELF symbols (globals such as a mutex)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.maps: list[tuple[int, int, str]] = []  # start, end, path ('' for anonymous)
        self.bases: dict[str, int] = {}
        self.symbols: dict[str, tuple[list[int], list[tuple[int, str]]]] = {}
        # each futex wait asks for its lock's name: a JVM's 7,000 waits in 3 s, on three dozen
        # addresses, each walked the mappings and opened an ELF file again (0.27 s)
        self.named: dict[int, str | None] = {}
        self.refresh()

    def refresh(self) -> None:
        """Read the mappings again: a command held stopped just after its exec has only the
        executable and the loader mapped, not yet its libraries. A process that has exited has
        none; the mappings read last stay."""
        try:
            text = Path(f"/proc/{self.pid}/maps").read_text(errors="surrogateescape")
        except OSError:
            return
        maps: list[tuple[int, int, str]] = []
        bases: dict[str, int] = {}
        for line in text.splitlines():
            parts = line.split(maxsplit=5)
            start, end = (int(x, 16) for x in parts[0].split("-"))
            path = parts[5] if len(parts) > 5 and parts[5].startswith("/") else ""
            maps.append((start, end, path))
            if path and path not in bases:
                bases[path] = start - int(parts[2], 16)
        if maps:
            self.maps, self.bases = maps, bases
            self.named.clear()

    def name(self, address: int) -> str | None:
        if address not in self.named:
            self.named[address] = self._name(address)
        return self.named[address]

    def _name(self, address: int) -> str | None:
        path = ""
        for start, end, mapped in self.maps:
            if start > address:
                break
            path = mapped or path  # .bss past the file mapping belongs to the file before it
            if address < end:
                break
        if not path:
            return None
        vaddr = address - self.bases[path] if _is_shared_object(path) else address
        starts, entries = self._symbols(path)
        i = bisect_right(starts, vaddr) - 1
        if i < 0:
            return None
        value, label = entries[i]
        size_end = int(label.split("\0")[1])
        if vaddr >= size_end:
            return None
        name = label.split("\0")[0]
        return name if vaddr == value else f"{name}+{vaddr - value:#x}"

    def _symbols(self, path: str) -> tuple[list[int], list[tuple[int, str]]]:
        if path not in self.symbols:
            entries: list[tuple[int, str]] = []
            # a mapped data file (a JVM's lib/modules, its class archive) has no symbols: two nm
            # runs that fail took 0.1-0.2 s each while the diagnosis waited
            for flag in ([], ["-D"]) if _is_elf(path) else ():
                done = subprocess.run(
                    ["nm", "--defined-only", "-S", *flag, path],
                    capture_output=True, text=True, timeout=30, check=False,
                )  # fmt: skip
                for line in done.stdout.splitlines():
                    parts = line.split()
                    if len(parts) == 4 and parts[2].lower() in "bdgsrv":
                        value, size = int(parts[0], 16), int(parts[1], 16)
                        entries.append((value, f"{parts[3]}\0{value + size}"))
                if entries:
                    break
            entries.sort()
            self.symbols[path] = ([v for v, _ in entries], entries)
        return self.symbols[path]


def _is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as file:
            return file.read(4) == b"\x7fELF"
    except OSError:
        return False


def _is_shared_object(path: str) -> bool:
    """ET_DYN (PIE executables, libraries): symbols are relative to the load address."""
    try:
        with open(path, "rb") as elf:
            header = elf.read(18)
    except OSError:
        return True
    return header[:4] == b"\x7fELF" and header[16] == 3


#: Thread entry points: never where a lock is taken (seen when libc's frames hide the caller).
ENTRY_FRAMES = {"start_thread", "clone", "clone3", "__libc_start_call_main", "__libc_start_main",
                "_start"}  # fmt: skip


def _site(stack: list[tuple[str, str]], skip: tuple[str, ...]) -> str:
    """The first frame (leaf first) that is neither locking code nor a thread entry point,
    nor a frame perf could not name (`[unknown]` of no module: stripped code's callers)."""
    for function, module in stack:
        if function in ENTRY_FRAMES or "futex" in function or any(s in function for s in skip):
            continue
        if frame_name(function, module) == "[unknown]":
            continue
        return f"{frame_name(function, module)} ({module})"
    return ""


def _kind(op: int, val: int, stack: list[tuple[str, str]]) -> str:
    functions = " ".join(f for f, _ in stack)
    if any(s in functions for s in MUTEX_FRAMES):
        return "mutex"
    if any(s in functions for s in CONDITION_FRAMES):
        return "condition"
    cmd = op & 0x7F
    if cmd in (6, 13) or (cmd == 0 and val == 2):
        return "mutex"
    return "condition"


def analyse(text: str, symbolizer: Symbolizer | None = None) -> Locks:
    """Futex waits and kernel lock contention from `perf script` of a per-process recording."""
    open_waits: dict[int, tuple[float, str, str, list[tuple[str, str]], str]] = {}
    open_kernel: dict[int, tuple[float, str, str, list[tuple[str, str]], str]] = {}
    user: dict[str, LockWait] = {}
    kernel: dict[str, LockWait] = {}
    span = Span()
    for event in span.events(text):
        if event.event == "syscalls:sys_enter_futex":
            match = FUTEX_ENTER.search(event.trace)
            if not match:
                continue
            op, val = int(match[2], 16), int(match[3], 16)
            if op & 0x7F not in FUTEX_CMD:
                continue
            kind = _kind(op, val, event.stack)
            open_waits[event.tid] = (event.time, match[1], kind, event.stack, event.comm)
        elif event.event == "syscalls:sys_exit_futex" and event.tid in open_waits:
            since, address, kind, stack, comm = open_waits.pop(event.tid)
            name = symbolizer.name(int(address, 16)) if symbolizer else None
            wait = user.setdefault(address, LockWait(name or address, address, kind))
            ms = (event.time - since) * 1000
            _add(wait, ms, (event.tid, comm), stack, MUTEX_FRAMES + CONDITION_FRAMES)
        elif event.event == "lock:contention_begin":
            match = CONTENTION.search(event.trace)
            if match:
                flags = match[2].lower().replace("|", "+")
                open_kernel[event.tid] = (event.time, match[1], flags, event.stack, event.comm)
        elif event.event == "lock:contention_end" and event.tid in open_kernel:
            since, address, flags, stack, comm = open_kernel.pop(event.tid)
            site = _site(stack, KERNEL_LOCK_FRAMES)
            key = f"{flags}@{site or address}"
            wait = kernel.setdefault(
                key,
                LockWait(
                    f"{flags} lock in {site.split(' (')[0] or address}", address, f"kernel:{flags}"
                ),
            )
            _add(wait, (event.time - since) * 1000, (event.tid, comm), stack, KERNEL_LOCK_FRAMES)
    locks = Locks(
        window_s=span.seconds,
        user=sorted(user.values(), key=lambda w: -w.wait_ms),
        kernel=sorted(kernel.values(), key=lambda w: -w.wait_ms),
    )
    if open_waits:
        locks.notes.append(
            f"{len(open_waits)} thread(s) were still waiting on a futex when recording ended "
            "(not counted: idle workers usually)"
        )
    return locks


def java_monitors(locks: Locks, dumps: list[str]) -> None:
    """Name the Java monitors threads were blocked on (`synchronized`). HotSpot parks a thread
    that waits for a monitor on its own event (a condition variable per thread), and the stacks
    stop in libc, so the futex recording sees per-thread condition waits. A condition wait whose
    waiters jstack saw blocked on one monitor (at the window's start or end) is that monitor's:
    the waits of all its threads are summed under it, as a contended `monitor` wait, the site
    being the Java frame that waits to lock it."""
    from hone.diagnose.threads import parse_blocked

    blocked: dict[str, tuple[str, str]] = {}
    for dump in dumps:
        for name, seen in parse_blocked(dump).items():
            blocked.setdefault(name[:15], seen)  # the kernel's thread name is 15 characters
    monitors: dict[str, LockWait] = {}
    kept: list[LockWait] = []
    for wait in locks.user:
        held = {blocked.get(w) for w in wait.waiters}
        if wait.kind != "condition" or len(held) != 1 or None in held:
            kept.append(wait)
            continue
        monitor, frame = held.pop()  # type: ignore[misc]
        merged = monitors.setdefault(monitor, LockWait(monitor, monitor, "monitor", site=frame))
        merged.wait_ms = round(merged.wait_ms + wait.wait_ms, 3)
        merged.count += wait.count
        merged.max_ms = max(merged.max_ms, wait.max_ms)
        merged.waiters += [w for w in wait.waiters if w not in merged.waiters]
        merged.threads.update(wait.threads)
        merged.stack = merged.stack or wait.stack
    locks.user = sorted(kept + list(monitors.values()), key=lambda w: -w.wait_ms)


def name_waiters(found: Locks, stats: list[ThreadStat]) -> None:
    """The waiters by their threads' own names where a runtime gave them (a JVM's from jstack,
    Python's from py-spy): the kernel's thread name, which the recording carries, is cut at 15
    characters, and Kafka's `data-plane-kafka-request-handler-1` and
    `data-plane-kafka-network-thread-1-...` were both `data-plane-kafk`, a JIT's
    `C2 CompilerThread0` was `C2 CompilerThre`. Threads without such a name keep the kernel's."""
    names = {t.tid: t.name for t in stats if t.name}
    for wait in [*found.user, *found.kernel]:
        if not wait.threads or not names.keys() & wait.threads.keys():
            continue
        waiters: list[str] = []
        for tid, comm in wait.threads.items():
            name = names.get(tid, comm)
            if name not in waiters:
                waiters.append(name)
        wait.waiters = waiters


def _add(
    wait: LockWait,
    ms: float,
    thread: tuple[int, str],
    stack: list[tuple[str, str]],
    skip: tuple[str, ...],
) -> None:
    tid, comm = thread
    wait.threads.setdefault(tid, comm)
    wait.count += 1
    wait.wait_ms = round(wait.wait_ms + ms, 3)
    if comm not in wait.waiters:
        wait.waiters.append(comm)
    if ms >= wait.max_ms:
        wait.max_ms = round(ms, 3)
        wait.stack = ";".join(frame_name(f, m) for f, m in reversed(stack))
        wait.site = _site(stack, skip) or wait.site


#: At most this much data per recording: a JVM whose threads fight over one monitor made
#: 28 MB/s of futex calls with stacks, and reading 84 MB took 11 s; the first 24 MB named the
#: same monitor, site and waiters. Waits per second are then over the part recorded.
MAX_SIZE = "24M"


def record_argv(pids: list[int], output: Path, duration: float, kernel_locks: bool) -> list[str]:
    """The futex calls (and kernel lock contention) of these processes, with stacks. Not quiet
    (-q): perf's reason when it fails, mostly that a listed process has ended."""
    events = ["-e", "syscalls:sys_enter_futex", "-e", "syscalls:sys_exit_futex"]
    if kernel_locks:
        events += ["-e", "lock:contention_begin", "-e", "lock:contention_end"]
    return [
        *scratch_record(), "-p", ",".join(map(str, pids)), "-g", "-o", str(output), *events,
        "--max-size", MAX_SIZE, "--", *timer(duration),
    ]  # fmt: skip
