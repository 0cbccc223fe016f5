"""The diagnosed process's children: where the work goes when it is not in the process itself.

Much real work runs in children: a shell script or `make` runs its commands as children, fio
runs each job in a process of its own, PostgreSQL serves each connection from a backend the
postmaster forks. So the recorders take the process and its descendants (`members`, every
process whose parent chain leads to it, from /proc's ppid fields), and perf follows what they
fork. The window also samples the descendants every half second: their CPU time (utime +
stime) and how often each was seen in uninterruptible sleep (D, mostly I/O), which says what
the recorders did not follow (`Watch`). A child born and gone between two samples is not seen.

A command that starts a daemon (`memcached -d`: fork, the parent exits, the child calls
setsid) leaves its tree at once: the daemon's parent becomes init, its session its own, and no
parent chain leads to it. So a command hone runs carries a mark in its environment (MARK, a
value of its own per run), which every process it forks inherits; a process that carries the
mark and is outside the tree is one the command left, found by reading the environment of each
new process once (/proc/PID/environ, root's to read). A daemon that clears its environment
carries no mark and is not found.

A systemd service (module unit) is its control group, not a tree: its other processes are the
group's, wherever their parent chains lead, and one that joins the group during the window
counts from then on."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hone.diagnose.unit import Unit

TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Child:
    """One descendant's share of the window: CPU in percent of one CPU (all its threads, so
    above 100 for a busy multi-threaded child), I/O as the share of samples it was seen in D."""

    pid: int
    comm: str
    cpu_pct: float
    io_pct: float
    daemon: bool = False  # it left the command's tree (module docstring)
    unit: str = ""  # the service whose control group it was in (module unit)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class _Seen:
    comm: str
    ticks0: int
    ticks: int
    in_d: int = 0


def processes() -> dict[int, tuple[int, str, str, int, int]]:
    """Every process: pid -> (ppid, comm, state, utime + stime, start since boot; in ticks)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(errors="replace")
        except OSError:  # gone since the listing
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        rest = stat[stat.rindex(")") + 2 :].split()
        found[int(entry.name)] = (int(rest[1]), comm, rest[0], int(rest[11]) + int(rest[12]),
                                  int(rest[19]))  # fmt: skip
    return found


def now_ticks() -> float:
    """Now on the clock of /proc's process start times (ticks since boot)."""
    return time.clock_gettime(time.CLOCK_BOOTTIME) * TICK


def descendants(pid: int, table: dict[int, tuple[int, str, str, int, int]]) -> list[int]:
    """The pids whose parent chain leads to `pid` (not `pid` itself), leaving out hone and its
    recorders (they descend from the diagnosed process when it is hone's own shell or pid 1)."""
    children: dict[int, list[int]] = {}
    for child, (parent, *_) in table.items():
        if child != os.getpid():
            children.setdefault(parent, []).append(child)
    found, todo = [], list(children.get(pid, []))
    while todo:
        child = todo.pop()
        found.append(child)
        todo += children.get(child, [])
    return found


def members(pid: int, unit: Unit | None = None, settled: float = 0.0) -> list[int]:
    """The processes to record, `pid` first: its descendants, or with `unit` every process of
    the service's control group, alive now; hone and its recorders left out (they are in the
    group when hone runs in it), and with `settled` those that have run for less than that many
    seconds: a process that ends while perf starts fails perf's whole list, and a connection
    opened and closed within perf's start (a client connecting per transaction) did every
    time (module window)."""
    table = processes()
    if unit:
        others = unit.pids() - {pid, os.getpid(), *descendants(os.getpid(), table)}
    else:  # hone's own are no descendants (module docstring)
        others = set(descendants(pid, table))
    latest = now_ticks() - settled * TICK  # the youngest start kept
    return [pid, *(other for other in sorted(others) if other in table
                   and table[other][2] not in ("Z", "X")
                   and (not settled or table[other][4] <= latest))]  # fmt: skip


#: The environment variable that marks a command hone runs and every process it forks.
MARK = "HONE_DIAGNOSE"


def carries(pid: int, mark: str) -> bool | None:
    """Whether the process's environment (as it was at its exec) holds MARK=`mark`; None when
    it reads empty: a kernel thread, or a process caught in an exec, whose new environment is
    not in place yet (a shell that exec's its daemon right after writing its pid file)."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:  # gone, or not ours to read
        return False
    return f"{MARK}={mark}".encode() in environ.split(b"\0") if environ else None


def marked(mark: str, session: int) -> list[int]:
    """Every live process that carries the mark outside the command's `session`, but hone's
    own: the daemons the command left, by pid."""
    return [
        pid
        for pid, (_, _, state, *_) in sorted(processes().items())
        if pid != os.getpid() and state != "Z" and _session(pid) != session and carries(pid, mark)
    ]


def alive(pid: int) -> bool:
    """Whether the process runs (a zombie has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text(errors="replace").rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def parent(pid: int) -> int:
    """The process's parent (0 once it has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(errors="replace")
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[1])


def thread_group(tid: int) -> int:
    """The process a thread id belongs to (its Tgid): the id itself for a process, another for
    a thread of one (`top -H` and `ps -L` show threads' ids, and /proc/TID reads like a
    process); 0 when it is gone."""
    try:
        for line in Path(f"/proc/{tid}/status").read_text().splitlines():
            if line.startswith("Tgid:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _session(pid: int) -> int | None:
    """The process's session id (field 6 of /proc/PID/stat), None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(errors="replace")
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2 :].split()[3])


class Watch:
    """The descendants over the window. A descendant already there at the first sample counts
    from its CPU time then; one seen later from zero when it started inside the window, else
    (moved into a service's group as it ran) from its CPU time when first seen. With `mark` (a
    command hone runs), the processes the command left (daemons) count as descendants too;
    with `unit` (a service), every process of its control group.

    `recorded` are the processes the recorders were given (module window); perf follows what
    they fork, so a process whose parent is recorded when it is first seen is recorded too, and
    so is a daemon the command left in the window (forked in its tree, then set apart).
    `followed` lists those added, for the window's other samplers; `result` the others."""

    def __init__(
        self,
        pid: int,
        mark: str | None = None,
        unit: Unit | None = None,
        recorded: Iterable[int] = (),
    ) -> None:
        self.pid = pid
        self.mark = mark
        self.unit = unit
        self.recorded = {pid, *recorded}
        self.followed: list[int] = []
        self.started = time.monotonic()
        # /proc's start times are whole ticks, rounded down: against the exact time, a daemon
        # forked within the tick the window began in would look older than the window
        self.began = int(now_ticks())
        self.at = self.started
        self.seen: dict[int, _Seen] = {}
        self.rounds = 0
        self.checked: set[int] = set()  # processes whose environment was read (or needs not be)
        self.daemons: set[int] = set()
        self.members: set[int] = set()  # processes seen in the unit's group
        self._sample(first=True)

    def sample(self) -> None:
        self._sample(first=False)

    def _sample(self, first: bool) -> None:
        self.at = time.monotonic()
        self.rounds += 1
        table = processes()
        tree = descendants(self.pid, table)
        counted = tree + self._left(table, set(tree), first) + self._grouped(table, tree)
        for child in dict.fromkeys(counted):  # each once: a daemon may be in the group too
            parent, comm, state, ticks, start = table[child]
            late = not first and start >= self.began
            new = child not in self.seen and child not in self.recorded
            if new and (parent in self.recorded or (late and child in self.daemons)):
                self.recorded.add(child)
                self.followed.append(child)
            seen = self.seen.setdefault(child, _Seen(comm, 0 if late else ticks, ticks))
            seen.comm, seen.ticks = comm, ticks
            seen.in_d += state == "D"

    def _left(self, table: dict, tree: set[int], first: bool) -> list[int]:
        """The live processes the command left, reading the environment of new ones only: the
        processes there at the first sample were there before the command was let run."""
        if self.mark is None:
            return []
        if first:
            self.checked = set(table)
        for pid in table.keys() - self.checked - tree - {self.pid, os.getpid()}:
            carried = carries(pid, self.mark)
            if carried is not None or pid == 2 or table[pid][0] == 2:  # kthreadd's: no environ
                self.checked.add(pid)  # else looked at again at the next sample
            if carried:
                self.daemons.add(pid)
        return [pid for pid in self.daemons if pid in table and pid not in tree]

    def _grouped(self, table: dict, tree: list[int]) -> list[int]:
        """The unit's processes outside the tree (all of the group's are its members), but
        hone and its recorders: they are in the group when hone runs in it (a login's scope)."""
        if self.unit is None:
            return []
        group = self.unit.pids() & table.keys()
        group -= {self.pid, os.getpid(), *descendants(os.getpid(), table)}
        self.members |= group
        return sorted(group - set(tree))

    def result(self, sampled: Iterable[int] = ()) -> list[Child]:
        """Each descendant the recorders did not follow (nor the on-CPU profile `sampled`) that
        used the CPU or waited in D, busiest first."""
        window = max(self.at - self.started, 1e-6)
        found = []
        recorded = self.recorded | set(sampled)
        for pid, seen in self.seen.items():
            if pid in recorded:
                continue
            cpu = 100 * (seen.ticks - seen.ticks0) / TICK / window
            io = 100 * seen.in_d / self.rounds
            if cpu >= 1 or io >= 1:
                daemon = pid in self.daemons
                unit = self.unit.name if self.unit and pid in self.members else ""
                found.append(Child(pid, seen.comm, round(cpu, 1), round(io, 1), daemon, unit))
        return sorted(found, key=lambda c: -(c.cpu_pct + c.io_pct))
