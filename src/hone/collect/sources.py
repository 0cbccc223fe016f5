"""Raw counters read straight from /proc and /sys: no sysstat process, no text tables to parse.

Each reader returns plain numbers (cumulative counters where the kernel keeps them); the
collector turns two readings into rates. Every reader is a single small file read, so a whole
reading costs well under a millisecond plus the process scan."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path

PROC = Path("/proc")
SYS_BLOCK = Path("/sys/block")
SYS_NET = Path("/sys/class/net")
#: /proc/stat CPU columns, in the kernel's order.
CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest",
              "guest_nice")  # fmt: skip
#: /proc/diskstats columns after the device name (the first 11 exist on every kernel).
DISK_FIELDS = ("reads", "rmerged", "rsectors", "rms", "writes", "wmerged", "wsectors", "wms",
               "inflight", "io_ms", "weighted_ms")  # fmt: skip
NET_FIELDS = ("rx_bytes", "rx_packets", "rx_errs", "rx_drop", "rx_fifo", "rx_frame",
              "rx_compressed", "rx_multicast", "tx_bytes", "tx_packets", "tx_errs", "tx_drop",
              "tx_fifo", "tx_colls", "tx_carrier", "tx_compressed")  # fmt: skip
PSI_RESOURCES = ("cpu", "memory", "io")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


def _read(path: Path | str) -> str:
    with open(path, "rb") as handle:
        return handle.read().decode(errors="replace")


@dataclass
class Stat:
    """/proc/stat: CPU time per CPU (ticks), interrupts, context switches, forks, run queue."""

    total: tuple[int, ...]
    cpus: dict[str, tuple[int, ...]]
    interrupts: int
    ctxt: int
    forks: int
    running: int
    blocked: int


def read_stat() -> Stat:
    cpus: dict[str, tuple[int, ...]] = {}
    total: tuple[int, ...] = ()
    interrupts = ctxt = forks = running = blocked = 0
    for line in _read(PROC / "stat").splitlines():
        name, _, rest = line.partition(" ")
        if name == "cpu":
            total = tuple(int(v) for v in rest.split())
        elif name.startswith("cpu"):
            cpus[name] = tuple(int(v) for v in rest.split())
        elif name == "intr":
            interrupts = int(rest.split(None, 1)[0])
        elif name == "ctxt":
            ctxt = int(rest)
        elif name == "processes":
            forks = int(rest)
        elif name == "procs_running":
            running = int(rest)
        elif name == "procs_blocked":
            blocked = int(rest)
    return Stat(total, cpus, interrupts, ctxt, forks, running, blocked)


def whole_disks() -> set[str]:
    """Block devices that are disks (not partitions), leaving out loop and RAM devices."""
    try:
        names = {entry.name for entry in os.scandir(SYS_BLOCK)}
    except OSError:
        return set()
    return {n for n in names if not n.startswith(("loop", "ram"))}


def read_diskstats(devices: set[str]) -> dict[str, tuple[int, ...]]:
    """Cumulative counters per device (see DISK_FIELDS); sectors are 512 bytes on every disk."""
    stats: dict[str, tuple[int, ...]] = {}
    for line in _read(PROC / "diskstats").splitlines():
        parts = line.split()
        if len(parts) >= 14 and parts[2] in devices:
            stats[parts[2]] = tuple(int(v) for v in parts[3:14])
    return stats


def read_netdev() -> dict[str, tuple[int, ...]]:
    """Cumulative counters per interface (see NET_FIELDS)."""
    stats: dict[str, tuple[int, ...]] = {}
    for line in _read(PROC / "net" / "dev").splitlines()[2:]:
        name, _, rest = line.partition(":")
        values = rest.split()
        if len(values) >= 16:
            stats[name.strip()] = tuple(int(v) for v in values[:16])
    return stats


def link_speed_mbits(interface: str) -> int | None:
    """The link speed in Mbit/s, None when the driver does not say (virtio, loopback)."""
    try:
        speed = int(_read(SYS_NET / interface / "speed"))
    except (OSError, ValueError):
        return None
    return speed if speed > 0 else None


def read_keyvalues(path: Path) -> dict[str, int]:
    """`Key: 123 kB` (meminfo) or `key 123` (vmstat) lines as numbers."""
    values: dict[str, int] = {}
    for line in _read(path).splitlines():
        parts = line.replace(":", " ").split()
        if len(parts) >= 2:
            try:
                values[parts[0]] = int(parts[1])
            except ValueError:
                continue
    return values


def read_meminfo() -> dict[str, int]:
    """/proc/meminfo in KiB."""
    return read_keyvalues(PROC / "meminfo")


def read_vmstat() -> dict[str, int]:
    return read_keyvalues(PROC / "vmstat")


@dataclass
class LoadAvg:
    ldavg1: float
    ldavg5: float
    ldavg15: float
    runnable: int
    tasks: int


def read_loadavg() -> LoadAvg:
    parts = _read(PROC / "loadavg").split()
    runnable, _, tasks = parts[3].partition("/")
    return LoadAvg(float(parts[0]), float(parts[1]), float(parts[2]), int(runnable), int(tasks))


def own_running() -> int:
    """How many of this process's own threads are runnable (state R) now: the one reading
    counts itself, and any other of hone's threads that is on a CPU or waiting for one. Read
    just after /proc/stat and /proc/loadavg, it is what their runnable counts hold of hone."""
    return sum(task.state == "R" for task in read_threads(os.getpid()).values())


def read_file_nr() -> tuple[int, int]:
    """Allocated file handles and the maximum (fs.file-max)."""
    allocated, _, maximum = _read(PROC / "sys" / "fs" / "file-nr").split()
    return int(allocated), int(maximum)


def read_pressure() -> dict[str, int]:
    """Total stall time in microseconds: `cpu.some`, `memory.full`, ...; empty without PSI."""
    totals: dict[str, int] = {}
    for resource in PSI_RESOURCES:
        try:
            text = _read(PROC / "pressure" / resource)
        except OSError:
            continue
        for line in text.splitlines():
            kind, *pairs = line.split()
            for pair in pairs:
                key, _, value = pair.partition("=")
                if key == "total":
                    totals[f"{resource}.{kind}"] = int(value)
    return totals


@dataclass
class Task:
    """One process or thread: CPU ticks used so far and where it stands."""

    pid: int
    name: str
    state: str
    ticks: int  # utime + stime
    threads: int = 1
    children: list[Task] = field(default_factory=list)


def _parse_task_stat(pid: int, text: str) -> Task | None:
    close = text.rfind(")")
    if close < 0:
        return None
    name = text[text.find("(") + 1 : close]
    fields = text[close + 2 :].split()
    # fields[0] is the state (field 3); utime, stime are fields 14, 15; num_threads is 20.
    try:
        return Task(pid, name, fields[0], int(fields[11]) + int(fields[12]), int(fields[17]))
    except (IndexError, ValueError):
        return None


def read_tasks() -> dict[int, Task]:
    """Every process's CPU ticks from /proc/PID/stat (a process may vanish while scanning)."""
    return _read_stats(PROC, [entry.name for entry in os.scandir(PROC) if entry.name.isdigit()])


def read_threads(pid: int) -> dict[int, Task]:
    """The threads of one process, each with its own CPU ticks."""
    folder = PROC / str(pid) / "task"
    try:
        names = [entry.name for entry in os.scandir(folder)]
    except OSError:
        return {}
    return _read_stats(folder, names)


def _read_stats(folder: Path, names: list[str]) -> dict[int, Task]:
    """The tasks of folder/NAME/stat by id; one that ended meanwhile is left out."""
    tasks: dict[int, Task] = {}
    for name in names:
        try:
            text = _read(folder / name / "stat")
        except OSError:
            continue
        task = _parse_task_stat(int(name), text)
        if task is not None:
            tasks[task.pid] = task
    return tasks


def read_context_switches(pid: int) -> tuple[int, int] | None:
    """Voluntary and involuntary context switches of a process (None if it is gone)."""
    try:
        text = _read(f"/proc/{pid}/status")
    except OSError:
        return None
    voluntary = involuntary = 0
    for line in text.splitlines():
        if line.startswith("voluntary_ctxt_switches"):
            voluntary = int(line.split()[1])
        elif line.startswith("nonvoluntary_ctxt_switches"):
            involuntary = int(line.split()[1])
    return voluntary, involuntary


def read_netstat() -> dict[str, int]:
    """/proc/net/snmp and /proc/net/netstat as `Tcp.RetransSegs`, `TcpExt.ListenOverflows`, ..."""
    values: dict[str, int] = {}
    for name in ("snmp", "netstat"):
        try:
            lines = _read(PROC / "net" / name).splitlines()
        except OSError:
            continue
        for header, numbers in zip(lines[::2], lines[1::2], strict=False):
            prefix, *keys = header.split()
            for key, number in zip(keys, numbers.split()[1:], strict=False):
                with contextlib.suppress(ValueError):
                    values[f"{prefix.rstrip(':')}.{key}"] = int(number)
    return values
