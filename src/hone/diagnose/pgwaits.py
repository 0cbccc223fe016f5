"""PostgreSQL's own lock waits, named from the backends' off-CPU stacks.

A backend that waits for a heavyweight lock (a row another transaction changed, a tuple lock, a
table) sleeps in ProcSleep, reached from LockAcquireExtended; PostgreSQL 15 sleeps there on its
latch (epoll_wait), so the futex recording (module locks) never sees it and the wait looks like
any other sleep. A backend waiting for a lightweight lock (LWLock: WAL, buffer mapping, lock
manager) sleeps in PGSemaphoreLock under LWLockAcquire, a semaphore in shared memory that no ELF
symbol names. Both are told apart here by the frames of the stack each backend left the CPU
with: Debian's postgres keeps frame pointers and exports these functions in its dynamic symbol
table, so perf names them although the binary is stripped (its static functions stay unnamed).

The postmaster forks a backend per connection: the recording takes the processes every recorder
of the window takes (the diagnosed process and its descendants, or a service's group: module
descendants, `members`), and perf follows the backends forked during the window. A backend that
ends while perf starts fails perf's whole list, which the window's recorders start again with a
fresh list (module window).
Time a backend spends waiting for its client's next statement (pq_getbyte, secure_read) is an
idle connection, not a wait inside the database, so a wait's share is of the rest."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from heapq import merge
from pathlib import Path
from typing import TYPE_CHECKING

from hone.diagnose import descendants, offcpu
from hone.diagnose.fold import is_kernel
from hone.diagnose.perf_record import scratch_record, timer

if TYPE_CHECKING:
    from hone.diagnose.unit import Unit

#: The lock machinery, leaf side first: a stack that passes through one of these waited there.
HEAVYWEIGHT = ("ProcSleep", "WaitOnLock", "LockAcquireExtended")
LIGHTWEIGHT = ("PGSemaphoreLock", "LWLockAcquire", "LWLockAcquireOrWait", "LWLockWaitForVar")
#: What a heavyweight lock was taken on, by the lock manager's caller (lmgr.c).
OBJECTS = {
    "XactLockTableWait": "transaction",  # the row's last updater has not committed yet
    "LockTuple": "tuple",  # queued behind another waiter for the same row
    "LockRelationOid": "relation",
    "LockRelation": "relation",
    "LockRelationForExtension": "relation extension",
    "LockPage": "page",
    "SpeculativeInsertionWait": "speculative insertion",
}
#: Neither the waiting code nor its caller: frames skipped when naming who waited.
MACHINERY = set(HEAVYWEIGHT + LIGHTWEIGHT + tuple(OBJECTS)) | {
    "WaitLatch", "WaitEventSetWait", "LockAcquire", "LockAcquireOrWait",
}  # fmt: skip
#: The SQL statement behind a heap access method that waits for a row.
STATEMENTS = {
    "heap_update": "UPDATE",
    "heap_delete": "DELETE",
    "heap_lock_tuple": "SELECT ... FOR UPDATE/SHARE (or the row lock of an UPDATE)",
    "heap_insert": "INSERT",
    "_bt_doinsert": "INSERT into a unique index",
    "ExecLockRows": "SELECT ... FOR UPDATE/SHARE",
}
#: The LWLock a caller waits for, by the caller (the lock's name is not on the stack).
LWLOCKS = {
    "XLogFlush": "WALWriteLock",
    "XLogWrite": "WALWriteLock",
    "XLogInsertRecord": "WALInsert",
    "WALInsertLockAcquire": "WALInsert",
    "BufferAlloc": "BufferMapping",
    "ReadBuffer_common": "BufferMapping",
    "LockBuffer": "BufferContent",
    "LockAcquireExtended": "LockManager",
    "ProcSleep": "LockManager",
    "LockReleaseAll": "LockManager",
    "TransactionIdSetTreeStatus": "XactSLRU (transaction status)",
    "GetSnapshotData": "ProcArrayLock",
    "ProcArrayEndTransaction": "ProcArrayLock",
}
CLIENT_WAIT = ("pq_getbyte", "secure_read", "pq_getmessage")
#: The note, printed on the terminal too, of a recording that failed: without it the verdict
#: would read as if the backends had not waited.
UNRECORDED = "PostgreSQL lock waits not recorded: "


@dataclass
class PgWait:
    """Time backends spent waiting for one kind of PostgreSQL lock, from one caller."""

    kind: str  # heavyweight or lwlock
    lock: str  # transaction, tuple, relation...; for an LWLock its name when the caller tells
    caller: str  # the first function outside the lock machinery, e.g. heap_update
    statement: str  # the SQL statement the caller serves, when known
    wait_us: float = 0.0


@dataclass
class PgWaits:
    window_s: float = 0.0
    busy_us: float = 0.0  # off-CPU time not spent waiting for the client
    waits: list[PgWait] = field(default_factory=list)  # longest first
    #: command tag (UPDATE) -> times a backend's process title said it was waiting for a lock
    waiting: dict[str, int] = field(default_factory=dict)

    @property
    def wait_us(self) -> float:
        return sum(w.wait_us for w in self.waits)

    @property
    def share(self) -> float:
        return self.wait_us / self.busy_us if self.busy_us else 0.0


def is_postgres(pid: int) -> bool:
    """The process runs the postgres server binary (postmaster or backend)."""
    try:
        exe = Path(f"/proc/{pid}/exe").resolve().name
    except OSError:
        return False
    return exe in ("postgres", "postmaster")


class Titles:
    """The backends' process titles over the window. PostgreSQL's title names the statement a
    backend runs by its command tag and ends in "waiting" while the backend waits for a
    heavyweight lock (update_process_title, on by default): the statement behind a wait whose
    frames, static functions of a stripped binary, do not say it."""

    def __init__(self, pid: int, unit: Unit | None = None) -> None:
        self.pid = pid
        self.unit = unit
        self.waiting: dict[str, int] = {}

    def sample(self) -> None:
        for child in descendants.members(self.pid, self.unit):
            try:
                title = Path(f"/proc/{child}/cmdline").read_bytes()
            except OSError:  # gone since the listing
                continue
            words = title.replace(b"\0", b" ").decode(errors="replace").split()
            if len(words) >= 2 and words[-1] == "waiting":
                self.waiting[words[-2]] = self.waiting.get(words[-2], 0) + 1


#: At most this much data per recording. A busy server switches hundreds of thousands of times
#: a second: three clients committing at fsync on wrote 21 MB/s of switches (42 MB took 12 s to
#: read) and twice that of futex calls. The first half second names the waits as the whole
#: does (WALWriteLock 0.91 thread-seconds per second from 12 MB, 0.87 from 32 MB), and the
#: futex recording, twice as dense, gets twice the room so that both cover the same time.
MAX_SIZE = {"switches": "12M", "futex": "24M"}


def record_argv(pids: list[int], output: Path, duration: float) -> list[str]:
    """Switch-outs with stacks of these processes (and what they fork), switch-ins from
    --switch-events: the recording of module offcpu, over several processes. Not quiet (-q):
    perf's reason when it fails, mostly that a listed process has ended."""
    return [
        *scratch_record(), "-p", ",".join(map(str, pids)), "-g", "--switch-events",
        "-o", str(output), "-e", "sched:sched_switch", "--max-size", MAX_SIZE["switches"],
        "--", *timer(duration),
    ]  # fmt: skip


def futex_argv(pids: list[int], output: Path, duration: float) -> list[str]:
    """Each futex wait of these processes with a DWARF-unwound user stack (see `mend`): 2 KB of
    stack per call, only where a backend sleeps on a semaphore, not at every switch. A recording
    of its own: perf script unwinds every event of a recording with DWARF once one has it, and
    the switches' user stacks would be lost. The wakes (FUTEX_WAKE, shared or private) are
    filtered out in the kernel. Not quiet, as `record_argv`."""
    return [
        *scratch_record(), "-p", ",".join(map(str, pids)), "--call-graph", "dwarf,2048",
        "-o", str(output), "-e", "syscalls:sys_enter_futex", "--filter", "op != 1 && op != 129",
        "--max-size", MAX_SIZE["futex"], "--", *timer(duration),
    ]  # fmt: skip


def mend(*streams: Iterable[offcpu.Event]) -> Iterator[offcpu.Event]:
    """Switch-outs inside a futex call with the user stack of that call. PGSemaphoreLock sleeps
    in sem_wait, and Debian's libc has no frame pointers: the frame-pointer walk stops in libc
    and the LWLock and its caller are lost. The futex call's own event was unwound with DWARF
    (libc's .eh_frame), so the thread's last futex call, the one it sleeps in, lends its stack.
    The streams (switches, futex calls) are merged by time: perf's clock is the same for every
    recording on the machine."""
    last: dict[int, list[tuple[str, str]]] = {}
    for event in merge(*streams, key=lambda e: e.time):
        if event.event == "syscalls:sys_enter_futex":
            last[event.tid] = event.stack
            continue
        if event.event == "sched:sched_switch" and event.tid in last:
            kernel = [frame for frame in event.stack if is_kernel(frame[1])]
            if any(function == "__x64_sys_futex" for function, _ in kernel):
                event.stack = kernel + last[event.tid]
        yield event


def classify(stack: str) -> PgWait | None:
    """The lock wait a folded stack (root first) shows, or None when it is no lock wait."""
    frames = stack.split(";")
    for i in range(len(frames) - 1, -1, -1):
        frame = frames[i]
        if frame in HEAVYWEIGHT or frame in LIGHTWEIGHT:
            callers = frames[:i]
            break
    else:
        return None
    kind = "heavyweight" if frame in HEAVYWEIGHT else "lwlock"
    # an LWLock's caller may be the lock manager itself (its partition locks)
    skip = MACHINERY if kind == "heavyweight" else set(LIGHTWEIGHT)
    # the machinery's own static functions (WaitOnLock) are unnamed too: start past its rootmost
    start = min((j for j, f in enumerate(callers) if f in skip), default=len(callers))
    outside = list(reversed(callers[:start]))
    named = next((f for f in outside if not f.startswith("[")), "")
    # a static function of the stripped binary stays unnamed: say where it was reached from
    unnamed = bool(outside) and outside[0].startswith("[") and named
    caller = f"{named} (through unnamed functions)" if unnamed else named
    if kind == "heavyweight":
        lock = next((OBJECTS[f] for f in reversed(callers) if f in OBJECTS), "")
    else:
        lock = LWLOCKS.get(caller, "")
    statement = next((STATEMENTS[f] for f in reversed(callers) if f in STATEMENTS), "")
    return PgWait(kind, lock or "other", caller, statement)


def analyse(text: str, futex_text: str = "") -> PgWaits:
    """The lock waits in `perf script` of `record_argv`'s recording (all its processes), the
    LWLock waits named through `futex_argv`'s recording."""
    events = mend(offcpu.parse_events(text), offcpu.parse_events(futex_text))
    off = offcpu.analyse(text, None, events=events)
    result = PgWaits(window_s=off.window_s)
    found: dict[tuple[str, str, str], PgWait] = {}
    for kind, stacks in off.stacks.items():
        if kind == "runqueue":  # preempted, or woken and waiting for a CPU: not a lock wait
            continue
        for stack, us in stacks.items():
            if any(f in CLIENT_WAIT for f in stack.split(";")):
                continue
            result.busy_us += us
            wait = classify(stack)
            if wait is None:
                continue
            found.setdefault((wait.kind, wait.lock, wait.caller), wait).wait_us += us
    result.waits = sorted(found.values(), key=lambda w: -w.wait_us)
    return result


def advice(wait: PgWait) -> str:
    """What to change for this wait, only as far as its frames show it."""
    if wait.kind == "heavyweight" and wait.lock in ("transaction", "tuple"):
        return (
            "many transactions change the same rows: each waits until the one before commits. "
            "Keep these transactions short (no work or client round trips after the UPDATE), "
            "batch or queue the changes to a hot row (one updater, or a counter split over "
            "several rows summed on read), and update rows in one order in every transaction"
        )
    if wait.kind == "heavyweight" and wait.lock == "relation":
        return (
            "a table lock: find the statement holding it (pg_locks, pg_stat_activity); DDL, "
            "LOCK TABLE and VACUUM FULL block readers and writers for their whole transaction"
        )
    if wait.lock == "WALWriteLock":
        return (
            "commits queue to flush the WAL: commit_delay with commit_siblings groups them into "
            "one flush, synchronous_commit=off drops the wait where losing the last commits on "
            "a crash is acceptable, faster WAL storage shortens it"
        )
    if wait.lock == "WALInsert":
        return "inserting into the WAL buffers: fewer, larger transactions write less WAL"
    if wait.lock == "BufferMapping":
        return "finding pages in shared_buffers: a larger shared_buffers evicts less often"
    return "see pg_stat_activity's wait_event for the lock's name while this runs"


def groups(waits: list[PgWait]) -> list[tuple[PgWait, list[str]]]:
    """The waits summed per lock (kind and object, whatever the caller), longest first, each
    with the statements seen on its stacks."""
    summed: dict[tuple[str, str], tuple[PgWait, list[str]]] = {}
    for wait in waits:
        key = (wait.kind, wait.lock)
        if key not in summed:
            summed[key] = (PgWait(wait.kind, wait.lock, "", ""), [])
        total, statements = summed[key]
        total.wait_us += wait.wait_us
        if wait.statement and wait.statement not in statements:
            statements.append(wait.statement)
    return sorted(summed.values(), key=lambda g: -g[0].wait_us)


def describe(wait: PgWait) -> str:
    """`heavyweight lock on a transaction in heap_update (UPDATE)`, to follow "a"."""
    known = wait.lock != "other"
    if wait.kind == "heavyweight":
        what = "heavyweight lock" + (f" on a {wait.lock}" if known else "")
    else:
        what = "lightweight lock (LWLock)" + (f" {wait.lock}" if known else "")
    where = f" in {wait.caller}" if wait.caller else ""
    statement = f" ({wait.statement})" if wait.statement else ""
    return f"{what}{where}{statement}"
