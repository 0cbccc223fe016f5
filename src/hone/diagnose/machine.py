"""The whole machine over a window (`hone diagnose --system`): who takes the CPUs.

Before anyone knows which pid to look at, the question is what the machine is busy with. Three
sources answer it:

- `/proc/stat` read at the window's start and end: every CPU's time split into user, nice,
  system, irq, softirq, iowait, steal and idle, exact (the kernel's own accounting), and
  `/proc/pressure/cpu` (PSI): the share of the window in which runnable work waited for a CPU;
- every process's and thread's CPU time, /proc/PID/stat read at the window's start and end
  (module cputime): the size of each process in the table, exact, for every process busy in
  the window whether perf sampled it or not. A process that ended inside the window cannot be
  read at its end: its size is its samples', and the table says so (`source`);
- the system-wide on-CPU samples (`perf record -a -g`), grouped by process and thread: how much
  of each process's time ran in the kernel, and its hottest function. Samples alone size a
  process badly when its work recurs every 10.1 ms, in step with perf's 99 Hz ticks: it is
  sampled in bursts, or not at all (docs/diagnose.md has the measurements).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hone.diagnose.cputime import TICK, Snapshot
from hone.diagnose.fold import Frame, Stack, is_kernel
from hone.shell import command_line

CPU_FIELDS = ("user", "nice", "system", "irq", "softirq", "iowait", "steal", "idle")
_STAT_ORDER = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


#: What sized a process or thread: the kernel's count of its CPU time, or its on-CPU samples
#: (one that ended inside the window; every row of a file saved without `source`).
KERNEL, SAMPLES = "kernel", "samples"


@dataclass
class ThreadShare:
    tid: int
    comm: str
    cpu_pct: float  # percent of one CPU over the window
    source: str = SAMPLES


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
    source: str = SAMPLES  # what cpu_pct is: KERNEL's count or its SAMPLES

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
    #: hone's own process tree (its Python process, the perf it runs, any helper): left out of
    #: `processes`, `split` and the verdict, and shown on a line of its own as hone's cost
    hone: list[Process] = field(default_factory=list)

    @property
    def hone_pct(self) -> float:
        """hone's own cost over the window, in percent of one CPU."""
        return round(sum(p.cpu_pct for p in self.hone), 1)

    @property
    def busy_cpus(self) -> float:
        """CPUs' worth of time not idle (iowait is idle time with I/O outstanding)."""
        idle = self.split.get("idle", 0.0) + self.split.get("iowait", 0.0)
        return self.cpus * (100 - idle) / 100

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Machine:
        """A saved machine; one saved without `hone` had hone's processes in its table."""

        def rows(key: str) -> list[Process]:
            return [
                Process(**{**p, "threads": [ThreadShare(**t) for t in p["threads"]]})
                for p in data.get(key) or []
            ]

        cpus, split = int(data["cpus"]), dict(data["split"])
        return cls(cpus, split, data["pressure"], rows("processes"), rows("hone"))


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


def without(split: dict[str, float], own: list[Process], cpus: int) -> dict[str, float]:
    """The CPU split as it would have been without hone (`own`, its processes): their time in
    user code out of user, in the kernel out of system, and into idle. Approximate in one
    way: the CPUs hone ran on might have run another waiting task instead (CPU pressure).
    hone's user/kernel split is its samples' and the machine's is the kernel's ticks: where
    they disagree (more of hone's samples in the kernel than the machine's system share), the
    rest of hone's time comes out of the other, so all of it goes to idle."""
    out = dict(split)
    machine_user, machine_system = out.get("user", 0.0), out.get("system", 0.0)
    total = min(sum(p.cpu_pct for p in own) / cpus, machine_user + machine_system)
    user = min(total - min(sum(p.kernel_pct for p in own) / cpus, machine_system), machine_user)
    out["user"] = round(machine_user - user, 1)
    out["system"] = round(machine_system - (total - user), 1)
    out["idle"] = round(out.get("idle", 0.0) + total, 1)
    return out


def root_of(root: str) -> tuple[str, int, int]:
    """`comm-PID/TID` (perf script folded with tids) -> (comm, pid, tid)."""
    comm, _, ids = root.rpartition("-")
    pid, _, tid = ids.partition("/")
    return comm, int(pid) if pid.isdigit() else -1, int(tid) if tid.isdigit() else -1


@dataclass
class _Sampled:
    """One process's on-CPU samples: all, in the kernel, per thread, by leaf function."""

    samples: int = 0
    kernel: int = 0
    threads: Counter = field(default_factory=Counter)
    names: dict[int, str] = field(default_factory=dict)
    leaves: Counter = field(default_factory=Counter)

    def hottest(self) -> str:
        """The function with the most self samples outside the kernel, `name (module)`."""
        if not self.leaves:
            return ""
        leaf = self.leaves.most_common(1)[0][0]
        return f"{leaf.function} ({Path(leaf.module).name})" if leaf.module else leaf.function


def _sampled(stacks: dict[tuple[str, Stack], int]) -> dict[int, _Sampled]:
    """The samples keyed by `comm-PID/TID` roots, per pid; pid 0 (the idle task) left out."""
    out: dict[int, _Sampled] = {}
    for (root, frames), count in stacks.items():
        comm, pid, tid = root_of(root)
        if pid <= 0:
            continue
        s = out.setdefault(pid, _Sampled())
        s.samples += count
        s.threads[tid] += count
        s.names[tid] = comm
        leaf = frames[-1] if frames else Frame(comm, "")
        if is_kernel(leaf.module):
            s.kernel += count
        else:
            s.leaves[leaf] += count
    return out


def processes(
    stacks: dict[tuple[str, Stack], int],
    rate_hz: float,
    window_s: float,
    before: Snapshot,
    after: Snapshot,
) -> list[Process]:
    """The process table, busiest first: every process that ran in the window, sized by the
    kernel's count of its CPU time between the two readings (or, one that ended inside the
    window, by its samples), its user/kernel split and hottest function from its samples."""
    per_sample = 100 / (rate_hz * window_s) if rate_hz and window_s else 0.0
    per_tick = 100 / (TICK * max(after.at - before.at, 1e-9))
    sampled = _sampled(stacks)
    table = []
    for pid in sorted(set(sampled) | set(after.processes)):
        s = sampled.get(pid, _Sampled())
        ran = after.since(before, pid)
        if ran is None and not s.samples:
            continue  # ended inside the window, unsampled; or running and missed at the start
        if ran is not None and not sum(ran) and not s.samples:
            continue  # asleep through the window
        if ran is None:
            cpu, source = s.samples * per_sample, SAMPLES
        else:
            cpu, source = sum(ran) * per_tick, KERNEL
        if s.samples:
            kernel = cpu * s.kernel / s.samples
        else:  # never sampled: the kernel's own user/system split of its time
            kernel = cpu * ran[1] / sum(ran) if ran and sum(ran) else 0.0
        known = after.processes.get(pid)
        comm = known.comm if known else s.names.get(pid) or next(iter(s.names.values()))
        table.append(
            Process(
                pid=pid,
                comm=comm,
                command=_command(pid) or comm,
                cpu_pct=round(cpu, 1),
                kernel_pct=round(kernel, 1),
                samples=s.samples,
                hottest=s.hottest(),
                threads=_threads(pid, s, before, after, per_sample, per_tick),
                source=source,
            )
        )
    return sorted(table, key=lambda p: (-p.cpu_pct, -p.samples, p.pid))


def _threads(
    pid: int, s: _Sampled, before: Snapshot, after: Snapshot, per_sample: float, per_tick: float
) -> list[ThreadShare]:
    """A process's five busiest threads, each sized as processes are: the kernel's count, or
    the samples of a thread that ended inside the window."""
    shares = []
    for tid in set(s.threads) | set(after.threads.get(pid, {})):
        ran = after.since(before, pid, tid)
        if ran is not None and (sum(ran) or s.threads[tid]):
            comm = after.threads[pid][tid].comm
            shares.append(ThreadShare(tid, comm, round(sum(ran) * per_tick, 1), KERNEL))
        elif ran is None and s.threads[tid]:
            shares.append(
                ThreadShare(tid, s.names[tid], round(s.threads[tid] * per_sample, 1), SAMPLES)
            )
    return sorted(shares, key=lambda t: (-t.cpu_pct, t.tid))[:5]


#: A program given inline and longer than this is cut in a process's description: a `python
#: -c` script of 2,000 characters, quoted whole, made every row of `--system`'s process table
#: that wide. A path or an option is kept whole, however long: it names what runs.
ARGUMENT = 60


def _short(argument: str) -> str:
    """The argument, or the start of a long one that holds spaces (a script's text)."""
    if len(argument) <= ARGUMENT or not any(c.isspace() for c in argument):
        return argument
    return argument[: ARGUMENT - 3] + "..."


def _command(pid: int) -> str:
    """The command line of a live process, program name and first arguments (a script's text
    cut at ARGUMENT characters); "" when gone."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0")
    except OSError:
        return ""
    argv = [a.decode(errors="replace") for a in raw.split(b"\0")] if raw else []
    if not argv:
        return ""
    if len(argv) == 1 and " " in argv[0]:  # a process that set its own title
        return " ".join(argv[0].split())
    return command_line([_short(w) for w in [Path(argv[0]).name, *argv[1:3]] if w])


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
        return [*lines, "processes: no on-CPU samples", *hone_line(m)]
    shown = m.processes[:rows]
    width = max(len(p.command) for p in shown)  # whole commands, in a column
    lines.append("processes (% of one CPU: on CPU / user / kernel; busiest threads):")
    sampled = False
    for p in shown:
        threads = [t for t in p.threads[:3] if t.cpu_pct >= 1] or p.threads[:1]
        busiest = ", ".join(f"{t.comm}/{t.tid} {t.cpu_pct:.0f}{_mark(t.source)}" for t in threads)
        sampled = sampled or SAMPLES in (p.source, *(t.source for t in threads))
        lines.append(
            f"  {p.pid:>7} {p.command:<{width}} {p.cpu_pct:6.1f}{_mark(p.source) or ' '}"
            f"{p.user_pct:6.1f} {p.kernel_pct:6.1f}  {busiest}"
        )
    if sampled:  # the mark is explained where it is shown
        lines.append(f"  {_mark(SAMPLES)} sized by on-CPU samples, not by the kernel's count "
                     "(ended inside the window, or a diagnosis saved without counts)")  # fmt: skip
    return [*lines, *hone_line(m)]


def hone_line(m: Machine) -> list[str]:
    """hone's own cost, on a line of its own: visible, and not taken for the workload."""
    if not m.hone:
        return []
    parts = ", ".join(f"{p.comm} (pid {p.pid}) {p.cpu_pct:.1f}" for p in m.hone)
    return [f"hone itself, left out of the figures above: {m.hone_pct:.1f}% of a CPU ({parts})"]


def _mark(source: str) -> str:
    """What marks a figure from samples in the terminal: one character, whole lines kept."""
    return "*" if source == SAMPLES else ""
