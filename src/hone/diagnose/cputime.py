"""The kernel's count of every process's and thread's CPU time, read at both ends of a
`--system` window: what sizes the process table (module machine).

perf's samples are taken on a timer, 10.10 ms apart at 99 Hz: a process whose work recurs at
that period runs in step with the ticks and is sampled in bursts or not at all, while the
kernel charges each task its exact run time. The source is /proc/PID/stat's utime+stime (and
/proc/PID/task/TID/stat's for threads), not schedstat's nanoseconds: a process's stat counts
its whole thread group, threads that ended inside the window included, where schedstat is one
task's and the process's total would need every thread read at both ends and still miss the
threads that came and went. The kernel scales utime+stime to its exact run time
(`cputime_adjust`), so stat is as exact as schedstat but for its unit, the clock tick
(10 ms): a share over a 10 s window is within 0.2 % of a CPU. Threads are read from stat too,
in the same unit, so a process's threads never add up to more than the process."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Times:
    """One task's CPU time so far, in clock ticks, when it started and its parent."""

    comm: str
    start: int  # clock ticks after boot: a pid reused inside the window has a later one
    user: int
    system: int
    parent: int = 0  # its parent process's pid (a thread's: its process's parent)


@dataclass
class Snapshot:
    """Every process's Times (its whole thread group) and every thread's, at one moment."""

    at: float  # time.monotonic() when the reading began
    boot_ticks: int  # clock ticks after boot when the reading began (as Times.start counts)
    processes: dict[int, Times] = field(default_factory=dict)
    threads: dict[int, dict[int, Times]] = field(default_factory=dict)

    @classmethod
    def read(cls, proc: Path = Path("/proc")) -> Snapshot:
        """Read /proc/PID/stat and /proc/PID/task/TID/stat of every process on the machine; a
        task that ends while it is read is left out, as one that ended just before."""
        now = cls(time.monotonic(), int(time.clock_gettime(time.CLOCK_BOOTTIME) * TICK))
        for entry in os.scandir(proc):
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            process = _read(f"{entry.path}/stat")
            if process is None:
                continue
            now.processes[pid] = process
            try:
                tasks = os.scandir(f"{entry.path}/task")
            except OSError:
                continue
            with tasks:
                threads = {int(t.name): _read(f"{t.path}/stat") for t in tasks}
            now.threads[pid] = {tid: t for tid, t in threads.items() if t is not None}
        return now

    def family(self, pid: int) -> set[int]:
        """`pid` and every process whose parent chain leads to it in this reading."""
        children: dict[int, list[int]] = {}
        for child, times in self.processes.items():
            children.setdefault(times.parent, []).append(child)
        found, todo = {pid}, list(children.get(pid, []))
        while todo:
            child = todo.pop()
            if child not in found:
                found.add(child)
                todo += children.get(child, [])
        return found

    def since(self, before: Snapshot, pid: int, tid: int | None = None) -> tuple[int, int] | None:
        """(user, system) ticks a process (or one of its threads) ran between `before` and this
        reading; from 0 for one that started inside the window; None where this reading has
        no such task (it ended) or `before` missed one that was already running."""
        now = self.processes.get(pid) if tid is None else self.threads.get(pid, {}).get(tid)
        if now is None:
            return None
        then = before.processes.get(pid) if tid is None else before.threads.get(pid, {}).get(tid)
        if then is not None and then.start == now.start:
            return now.user - then.user, now.system - then.system
        if now.start >= before.boot_ticks:  # started inside the window (a new or reused id)
            return now.user, now.system
        return None


def parse_stat(text: str) -> Times:
    """`/proc/PID/stat` -> Times. The name is between the first `(` and the last `)`: it may
    hold spaces and parentheses of its own."""
    rest = text[text.rindex(")") + 2 :].split()
    comm = text[text.index("(") + 1 : text.rindex(")")]
    return Times(comm, int(rest[19]), int(rest[11]), int(rest[12]), int(rest[1]))


def _read(path: str) -> Times | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as stream:
            return parse_stat(stream.read())
    except (OSError, ValueError, IndexError):  # it ended between listing and reading
        return None
