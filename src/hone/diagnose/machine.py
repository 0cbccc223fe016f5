"""The whole machine over a window (`hone diagnose --system`): who takes the CPUs.

Before anyone knows which pid to look at, the question is what the machine is busy with. Two
sources answer it:

- `/proc/stat` read at the window's start and end: every CPU's time split into user, nice,
  system, irq, softirq, iowait, steal and idle, exact (the kernel's own accounting), and
  `/proc/pressure/cpu` (PSI): the share of the window in which runnable work waited for a CPU;
- the system-wide on-CPU samples (`perf record -a -g`), grouped by process and thread: each
  process's share of a CPU (samples over rate x window), how much of it ran in the kernel, its
  busiest threads and its hottest function. Sampling counts processes that came and went within
  the window too, which two readings of /proc would miss; at 99 Hz a process at 10 % of a CPU
  for 10 s has about 100 samples (+-10 %), unless its work recurs every 10.1 ms, in step with
  the ticks: it is then sampled in bursts, or not at all (docs/diagnose.md has the measurements).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hone.diagnose.fold import Frame, Stack, is_kernel
from hone.shell import command_line

CPU_FIELDS = ("user", "nice", "system", "irq", "softirq", "iowait", "steal", "idle")
_STAT_ORDER = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


@dataclass
class ThreadShare:
    tid: int
    comm: str
    cpu_pct: float  # percent of one CPU over the window


@dataclass
class Process:
    """One process's share of the window, in percent of one CPU (all its threads: above 100
    for a process busy on several CPUs)."""

    pid: int
    comm: str
    command: str  # `duty 2 70`: its command line at the window's end, else its name
    cpu_pct: float
    kernel_pct: float  # the part of cpu_pct whose samples were in the kernel
    samples: int
    hottest: str = ""  # its function with the most self samples, `name (module)`
    threads: list[ThreadShare] = field(default_factory=list)  # busiest first, at most 5

    @property
    def user_pct(self) -> float:
        return self.cpu_pct - self.kernel_pct

    @property
    def drill_in(self) -> str:
        """The command that diagnoses this process on its own (threads, off-CPU, locks)."""
        return f"hone diagnose --pid {self.pid}"


@dataclass
class Machine:
    """The machine's CPU time split (percent of all CPUs' time), CPU pressure and processes."""

    cpus: int
    split: dict[str, float]
    pressure: float | None  # share of the window some runnable task waited for a CPU (PSI)
    processes: list[Process]

    @property
    def busy_cpus(self) -> float:
        """CPUs' worth of time not idle (iowait is idle time with I/O outstanding)."""
        idle = self.split.get("idle", 0.0) + self.split.get("iowait", 0.0)
        return self.cpus * (100 - idle) / 100

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Machine:
        processes = [
            Process(**{**p, "threads": [ThreadShare(**t) for t in p["threads"]]})
            for p in data["processes"]
        ]
        return cls(int(data["cpus"]), dict(data["split"]), data["pressure"], processes)


@dataclass
class Counters:
    """/proc/stat's CPU line (ticks) and PSI's cpu `some` total (microseconds) at one moment."""

    at: float
    ticks: dict[str, int]
    pressure_us: int | None

    @classmethod
    def read(cls) -> Counters:
        line = Path("/proc/stat").read_text().splitlines()[0].split()
        ticks = {name: int(value) for name, value in zip(_STAT_ORDER, line[1:], strict=False)}
        try:
            some = Path("/proc/pressure/cpu").read_text().splitlines()[0]
            pressure = int(some.rsplit("total=", 1)[1])
        except (OSError, IndexError, ValueError):  # no PSI in this kernel
            pressure = None
        return cls(time.monotonic(), ticks, pressure)


def split(before: Counters, after: Counters) -> dict[str, float]:
    """Percent of all CPUs' time in each state between two readings."""
    delta = {k: after.ticks.get(k, 0) - before.ticks.get(k, 0) for k in CPU_FIELDS}
    total = sum(delta.values()) or 1
    return {k: round(100 * delta[k] / total, 1) for k in CPU_FIELDS}


def pressure(before: Counters, after: Counters) -> float | None:
    if before.pressure_us is None or after.pressure_us is None:
        return None
    window_us = (after.at - before.at) * 1e6
    return round(min(1.0, (after.pressure_us - before.pressure_us) / window_us), 3)


def root_of(root: str) -> tuple[str, int, int]:
    """`comm-PID/TID` (perf script folded with tids) -> (comm, pid, tid)."""
    comm, _, ids = root.rpartition("-")
    pid, _, tid = ids.partition("/")
    return comm, int(pid) if pid.isdigit() else -1, int(tid) if tid.isdigit() else -1


def processes(
    stacks: dict[tuple[str, Stack], int], rate_hz: float, window_s: float
) -> list[Process]:
    """The process table of system-wide samples keyed by `comm-PID/TID` roots, busiest first.
    pid 0 (the idle task) is left out: idle time is /proc/stat's."""
    per_sample = 100 / (rate_hz * window_s) if rate_hz and window_s else 0.0
    samples: Counter = Counter()
    kernel: Counter = Counter()
    threads: dict[int, Counter] = {}
    names: dict[int, dict[int, str]] = {}
    leaves: dict[int, Counter] = {}
    for (root, frames), count in stacks.items():
        comm, pid, tid = root_of(root)
        if pid <= 0:
            continue
        samples[pid] += count
        threads.setdefault(pid, Counter())[tid] += count
        names.setdefault(pid, {})[tid] = comm
        leaf = frames[-1] if frames else Frame(comm, "")
        if is_kernel(leaf.module):
            kernel[pid] += count
        else:
            leaves.setdefault(pid, Counter())[leaf] += count
    table = []
    for pid, n in samples.items():
        comm = names[pid].get(pid) or next(iter(names[pid].values()))
        hottest = leaves[pid].most_common(1)[0][0] if pid in leaves else None
        module = Path(hottest.module).name if hottest and hottest.module else ""
        busiest = [
            ThreadShare(tid, names[pid][tid], round(k * per_sample, 1))
            for tid, k in threads[pid].most_common(5)
        ]
        table.append(
            Process(
                pid=pid,
                comm=comm,
                command=_command(pid) or comm,
                cpu_pct=round(n * per_sample, 1),
                kernel_pct=round(kernel[pid] * per_sample, 1),
                samples=n,
                hottest=f"{hottest.function} ({module})"
                if module
                else getattr(hottest, "function", ""),
                threads=busiest,
            )
        )
    return sorted(table, key=lambda p: (-p.samples, p.pid))


def _command(pid: int) -> str:
    """The command line of a live process, program name and first arguments; "" when gone."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0")
    except OSError:
        return ""
    argv = [a.decode(errors="replace") for a in raw.split(b"\0")] if raw else []
    if not argv:
        return ""
    if len(argv) == 1 and " " in argv[0]:  # a process that set its own title
        return " ".join(argv[0].split())
    return command_line([w for w in [Path(argv[0]).name, *argv[1:3]] if w])


def describe(pid: int) -> str:
    """`pid 12 (server -c x.conf)`: the program's name and first arguments. A process that set
    its own title (nginx: worker process) keeps it as written, since its first word is not a
    path; a kernel thread, which has no command line, is `[name]` as ps shows it."""
    command = _command(pid)
    if command:
        return f"pid {pid} ({command})"
    try:
        comm = Path(f"/proc/{pid}/comm").read_text(errors="replace").strip()
    except OSError:
        return f"pid {pid}"
    return f"pid {pid} ([{comm}])"


def terminal_lines(m: Machine, rows: int = 10) -> list[str]:
    """The CPU split and the process table, one process a line, whole lines through a pipe."""
    parts = ", ".join(f"{k} {v:.1f}" for k, v in m.split.items())
    lines = [f"CPU time (% of {m.cpus} CPUs): {parts}"]
    if m.pressure is not None:
        lines.append(f"CPU pressure: runnable work waited for a CPU {m.pressure:.0%} of the window")
    if not m.processes:
        return [*lines, "processes: no on-CPU samples"]
    shown = m.processes[:rows]
    width = max(len(p.command) for p in shown)  # whole commands, in a column
    lines.append("processes (% of one CPU: on CPU / user / kernel; busiest threads):")
    for p in shown:
        threads = [t for t in p.threads[:3] if t.cpu_pct >= 1] or p.threads[:1]
        busiest = ", ".join(f"{t.comm}/{t.tid} {t.cpu_pct:.0f}" for t in threads)
        lines.append(
            f"  {p.pid:>7} {p.command:<{width}} {p.cpu_pct:6.1f} {p.user_pct:6.1f} "
            f"{p.kernel_pct:6.1f}  {busiest}"
        )
    return lines
