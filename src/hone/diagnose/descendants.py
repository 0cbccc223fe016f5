"""The diagnosed process's children: where the work went when it is not in the process itself.

hone records one process (perf -p, the thread sampler), but much real work runs in children:
a shell script or `make` runs its commands as children, fio runs each job in a process of its
own, PostgreSQL serves each connection from a backend the postmaster forks. Diagnosed alone,
such a parent only waits, and "mostly idle" would be the wrong verdict. So the window also
samples the process's descendants (every process whose parent chain leads to it, from /proc's
ppid fields): their CPU time (utime + stime) and how often each was seen in uninterruptible
sleep (D, mostly I/O). A child born and gone between two samples is not seen."""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Child:
    """One descendant's share of the window: CPU in percent of one CPU (all its threads, so
    above 100 for a busy multi-threaded child), I/O as the share of samples it was seen in D."""

    pid: int
    comm: str
    cpu_pct: float
    io_pct: float

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class _Seen:
    comm: str
    ticks0: int
    ticks: int
    in_d: int = 0


def processes() -> dict[int, tuple[int, str, str, int]]:
    """Every process: pid -> (ppid, comm, state, utime + stime in ticks)."""
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
        found[int(entry.name)] = (int(rest[1]), comm, rest[0], int(rest[11]) + int(rest[12]))
    return found


def descendants(pid: int, table: dict[int, tuple[int, str, str, int]]) -> list[int]:
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


class Watch:
    """The descendants over the window. A descendant already there at the first sample counts
    from its CPU time then; one born later from zero."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.started = time.monotonic()
        self.at = self.started
        self.seen: dict[int, _Seen] = {}
        self.rounds = 0
        self._sample(first=True)

    def sample(self) -> None:
        self._sample(first=False)

    def _sample(self, first: bool) -> None:
        self.at = time.monotonic()
        self.rounds += 1
        table = processes()
        for child in descendants(self.pid, table):
            _, comm, state, ticks = table[child]
            seen = self.seen.setdefault(child, _Seen(comm, ticks if first else 0, ticks))
            seen.comm, seen.ticks = comm, ticks
            seen.in_d += state == "D"

    def result(self) -> list[Child]:
        """Each descendant that used the CPU or waited in D, busiest first."""
        window = max(self.at - self.started, 1e-6)
        found = []
        for pid, seen in self.seen.items():
            cpu = 100 * (seen.ticks - seen.ticks0) / TICK / window
            io = 100 * seen.in_d / self.rounds
            if cpu >= 1 or io >= 1:
                found.append(Child(pid, seen.comm, round(cpu, 1), round(io, 1)))
        return sorted(found, key=lambda c: -(c.cpu_pct + c.io_pct))
