"""How many system calls a process makes per second: the evidence beside a finding in the
kernel's time. The on-CPU samples say how much time the calls took, not how many there were,
and whether batching would pay depends on both: 4 million 1-byte writes a second want a buffer,
forty thousand 64 KB reads do not.

The count is `perf stat -e raw_syscalls:sys_enter -p PID,...` counting: the kernel adds one to a
counter at each call of the recorded processes' threads (and of the children they start), and
nothing is recorded per call. Counting is not free: each call of the process then takes the
tracing slow path and fills the tracepoint's record, about 120 ns a call on the project's test
VM (a loop of 1-byte writes to /dev/null made 36 % fewer calls per CPU-second while counted; a
program making 10,000 calls a second pays about 1.2 ms of CPU time a second). perf stat enables
its counter before the window starts (the other recorders are slower to start), so a running
process's calls are divided by perf's own time from the enable to its stop; a command hone holds
stopped until the window starts makes its calls in the window.

Which calls they were is the kernel's own accounting, free: /proc/PID/io counts the process's
read-like (`syscr`: read, pread64, readv, ...) and write-like (`syscw`: write, pwrite64,
writev, ...) calls, read at the window's start and every half second (the last reading while
the process could be read is the end). Counting each call by name (`syscalls:sys_enter_NAME`)
would cost another 140 ns per counted call, and the names to count are not known before."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from hone.diagnose.descendants import parent
from hone.diagnose.perf_record import timer
from hone.errors import HoneError

EVENT = "raw_syscalls:sys_enter"
#: Counted beside the calls when the kernel has them: processes (and threads) the recorded ones
#: start, those that exec another program, and those that end (module churn). The fork event
#: fires in the parent, exec and exit in the child, which inherits the counter.
FORK, EXEC = "sched:sched_process_fork", "sched:sched_process_exec"
EXIT = "sched:sched_process_exit"


@dataclass
class Count:
    """perf stat's count of the process's system calls, over the seconds from the counter's
    enable to perf's stop, and of the processes they started and that ended."""

    calls: int
    seconds: float
    forks: int = 0
    execs: int = 0
    exits: int = 0


def count_argv(pids: list[int], output: Path, bound: float, forks: bool = False) -> list[str]:
    """perf stat counting these processes' calls (with `forks`, their forks, execs and exits) into
    `output` (its name tells the window when perf has enabled the counter) until it is stopped
    (SIGINT) or `bound` seconds pass. One interval as long as that: on SIGINT perf stat prints
    it with its time since the enable, and ends its `sleep` (without -I it waits for the
    `sleep` to end)."""
    events = ["-e", EVENT, *(["-e", FORK, "-e", EXEC, "-e", EXIT] if forks else [])]
    return ["perf", "stat", "-x,", "-I", f"{int(bound * 1000)}", "-o", str(output), *events,
            "-p", ",".join(map(str, pids)), "--", *timer(bound)]  # fmt: skip


def parse(text: str) -> Count | None:
    """The count and its seconds from perf stat's interval lines (`0.968635772,1053618,,
    raw_syscalls:sys_enter,...`); the last line's time is the whole span. `<not counted>` is a
    counter that never ran: the process was not on a CPU while it counted (a service's idle
    master asleep through the window), so it made no call."""
    counts, seconds = {EVENT: 0, FORK: 0, EXEC: 0, EXIT: 0}, 0.0
    for line in text.splitlines():
        parts = line.split(",")
        if len(parts) < 4 or parts[3].strip() not in counts:
            continue
        made = "0" if parts[1].strip() == "<not counted>" else parts[1]
        try:
            at, counts[parts[3].strip()] = float(parts[0]), counts[parts[3].strip()] + int(made)
        except ValueError:
            if parts[3].strip() == EVENT:
                return None  # <not supported>
            continue
        if parts[3].strip() == EVENT:
            seconds = at
    if not seconds:
        return None
    return Count(counts[EVENT], seconds, counts[FORK], counts[EXEC], counts[EXIT])


def count(argv: list[str], output: Path, start: Callable[..., subprocess.Popen]) -> Count:
    """Run the counting perf stat (`start` starts it where the window can stop it) and read
    what it wrote when stopped. On SIGINT perf stat in interval mode leaves its `sleep`
    running: perf runs in a session of its own, whose rest is ended once perf has (the
    `sleep` would outlive the diagnosis by the bound)."""
    process = start(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    start_new_session=True)  # fmt: skip
    try:
        process.wait()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    try:
        text = output.read_text()
    except OSError:
        text = ""
    counted = parse(text)
    if counted is None:
        said = (text.strip() or "no output").splitlines()[-1]
        raise HoneError(f"perf stat counted no {EVENT}: {said}")
    return counted


def _io(pid: int) -> tuple[int, int] | None:
    """(read-like, write-like) calls of the process so far, from /proc/PID/io."""
    try:
        fields = dict(
            line.split(":", 1) for line in Path(f"/proc/{pid}/io").read_text().splitlines()
        )
        return int(fields["syscr"]), int(fields["syscw"])
    except (OSError, KeyError, ValueError):
        return None


class Watch:
    """The read-like and write-like calls of the recorded processes at the window's start and
    their last reading: those there at the start from their counts then, those `follow` adds
    (born in the window) from zero.

    A process's /proc/PID/io counts its threads, those that ended, and the children it has
    reaped: when a parent waits for a child, the kernel adds the child's whole count, from the
    child's start, to the parent's (`wait_task_zombie`). nginx's master reaping its workers at
    a stop, the postmaster reaping a backend at each disconnection, a shell reaping its
    commands: the parent's count jumps by what the child did before the window too, and
    the child, counted on its own, would be counted twice. So a process found gone (reaped:
    a zombie still reads) whose recorded parent's count grew since the reading before by at
    least the child's last reading is taken as carried by the parent: only its count before
    the window (or before it was followed) is taken off. A child its parent did not reap (a
    daemon's parent ended, a parent that lets the kernel reap, SIGCHLD ignored) counts on its
    own up to its last reading. The parent's growth is counted from its reading of the pass
    before the one that found the child gone, and a pass reads the processes in the reverse of
    the order they were added in (descendants mostly after their ancestors: children first),
    so a reaping between the two readings of one pass is seen too."""

    def __init__(self, pids: list[int]) -> None:
        self.first = {pid: io for pid in pids if (io := _io(pid))}
        self.last = dict(self.first)
        self.parents = {pid: parent(pid) for pid in self.first}
        self.gone: dict[int, tuple[int, int] | None] = {}  # pid: its parent's reading before

    def follow(self, pids: list[int]) -> None:
        for pid in pids:
            if pid not in self.first:
                self.first[pid] = (0, 0)
                self.parents[pid] = parent(pid)

    def sample(self) -> None:
        before = dict(self.last)
        for pid in reversed(list(self.first)):
            if pid in self.gone:
                continue
            io = _io(pid)
            if io:
                self.last[pid] = io
            else:
                self.gone[pid] = before.get(self.parents[pid])
                self.last.setdefault(pid, self.first[pid])

    def _carried(self, pid: int) -> bool:
        """Whether the process's parent reaped it: the parent's count grew at least by the
        child's own since the reading before the child was found gone."""
        base, end = self.gone.get(pid), self.last.get(self.parents[pid])
        if base is None or end is None:
            return False
        own = self.last.get(pid, self.first[pid])
        return all(end[i] - base[i] >= own[i] for i in (0, 1))

    def delta(self) -> tuple[int, int]:
        if not self.first or not self.last:
            return 0, 0
        reads = writes = 0
        for pid, start in self.first.items():
            end = (0, 0) if pid in self.gone and self._carried(pid) else self.last.get(pid, start)
            reads, writes = reads + end[0] - start[0], writes + end[1] - start[1]
        return reads, writes


#: The kinds of call /proc/PID/io tells apart, and the calls each holds.
KINDS = {"writes": "write, pwrite64, writev", "reads": "read, pread64, readv"}


@dataclass
class Syscalls:
    """The process's system calls over the window."""

    calls: int  # every system call counted (raw_syscalls:sys_enter)
    seconds: float  # the time they were counted over
    reads: int = 0  # read-like calls over the window (/proc/PID/io syscr)
    writes: int = 0  # write-like calls (syscw)
    io_seconds: float = 0.0  # the time reads and writes were counted over; 0: not read

    @property
    def rate(self) -> float:
        return self.calls / self.seconds if self.seconds > 0 else 0.0

    def rates(self) -> dict[str, float]:
        """Calls per second by kind: writes, reads, and the other calls (the rest of the
        count); empty when /proc/PID/io was not read."""
        if self.io_seconds <= 0:
            return {}
        writes, reads = self.writes / self.io_seconds, self.reads / self.io_seconds
        return {"writes": writes, "reads": reads, "other calls": max(self.rate - writes - reads, 0)}

    @property
    def verdict(self) -> str:
        """`2,093,000 calls/s, mostly writes (write, pwrite64, writev: 2,093,000/s); reads 0/s,
        other calls 0/s`: how many calls batching could save, and of which kind."""
        said = f"{self.rate:,.0f} calls/s"
        rates = self.rates()
        if not rates:
            return f"{said} (/proc/PID/io was not readable: no split by kind)"
        top = max(rates, key=lambda kind: rates[kind])
        if rates[top] < self.rate / 2 or not self.rate:
            return f"{said}: " + ", ".join(f"{k} {v:,.0f}/s" for k, v in rates.items())
        calls = f"{KINDS[top]}: " if top in KINDS else ""
        rest = ", ".join(f"{k} {v:,.0f}/s" for k, v in rates.items() if k != top)
        return f"{said}, mostly {top} ({calls}{rates[top]:,.0f}/s); {rest}"

    def to_dict(self) -> dict:
        return {**asdict(self), "per_second": round(self.rate, 1), "verdict": self.verdict}

    @classmethod
    def from_dict(cls, data: dict) -> Syscalls:
        return cls(int(data["calls"]), float(data["seconds"]), int(data["reads"]),
                   int(data["writes"]), float(data["io_seconds"]))  # fmt: skip


def measure(counted: Count, io: Watch, window: float, held: bool) -> Syscalls:
    """The calls over the time they were counted: from perf's enable to its stop (a running
    process makes calls while the other recorders start), or the window for a command held
    stopped until it starts; the reads and writes over the window."""
    seconds = window if held else counted.seconds
    reads, writes = io.delta()
    io_seconds = window if io.first and io.last else 0.0
    return Syscalls(counted.calls, round(seconds, 4), reads, writes, round(io_seconds, 4))
