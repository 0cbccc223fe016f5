"""The collector: two readings of the kernel's counters, an interval apart, become one snapshot of
named metrics.

Names follow A-Tune's `MODULE.PURPOSE.metric` scheme so that A-Tune's training data and hone's
line up (`CPU.STAT.util`, `STORAGE.STAT.r_await`, `SYS.LDAVG.runq-sz`, ...) and mean what
mpstat, iostat -x, sar and vmstat mean by them. hone's additions use the same scheme, with the
device in brackets for per-device values (`STORAGE.STAT.util[vda]`, `CPU.STAT.util[cpu1]`).

Which devices fill A-Tune's single-device columns: the disk is `{disk}` (HONE_DISK, else the
first real disk, as profiles detect it); the network columns add up every interface, loopback
included, unless one interface is named, because clients on the same host talk over `lo`."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from hone.collect import sources
from hone.collect.perf import (
    PERF_METRICS,
    PerfCounters,
    derived,
    hardware_counters_available,
)

#: A-Tune's 52 metric columns, in the order of its CSV files.
ATUNE_METRICS = (
    "CPU.STAT.usr", "CPU.STAT.nice", "CPU.STAT.sys", "CPU.STAT.iowait", "CPU.STAT.irq",
    "CPU.STAT.soft", "CPU.STAT.steal", "CPU.STAT.guest", "CPU.STAT.util", "CPU.STAT.cutil",
    "STORAGE.STAT.rs", "STORAGE.STAT.ws", "STORAGE.STAT.rMBs", "STORAGE.STAT.wMBs",
    "STORAGE.STAT.rrqm", "STORAGE.STAT.wrqm", "STORAGE.STAT.rareq-sz", "STORAGE.STAT.wareq-sz",
    "STORAGE.STAT.r_await", "STORAGE.STAT.w_await", "STORAGE.STAT.util", "STORAGE.STAT.aqu-sz",
    "NET.STAT.rxkBs", "NET.STAT.txkBs", "NET.STAT.rxpcks", "NET.STAT.txpcks", "NET.STAT.ifutil",
    "NET.ESTAT.errs", "NET.ESTAT.util", "MEM.BANDWIDTH.Total_Util", *PERF_METRICS,
    "MEM.VMSTAT.procs.b", "MEM.VMSTAT.memory.swpd", "MEM.VMSTAT.io.bo", "MEM.VMSTAT.system.in",
    "MEM.VMSTAT.system.cs", "MEM.VMSTAT.util.swap", "MEM.VMSTAT.util.cpu", "MEM.VMSTAT.procs.r",
    "SYS.TASKS.procs", "SYS.TASKS.cswchs", "SYS.LDAVG.runq-sz", "SYS.LDAVG.plist-sz",
    "SYS.LDAVG.ldavg-1", "SYS.LDAVG.ldavg-5", "SYS.FDUTIL.fd-util",
)  # fmt: skip
#: A-Tune's CPU.STAT.cutil: the mean utilisation of the cores busier than this (percent).
CUTIL_THRESHOLD = 30.0
MEMINFO_KEYS = ("MemTotal", "MemFree", "MemAvailable", "Buffers", "Cached", "SwapTotal",
                "SwapFree", "Dirty", "Writeback", "AnonPages", "Shmem")  # fmt: skip
#: /proc/diskstats fields the kernel prints as 32-bit milliseconds (read, write, busy, queue).
DISK_WRAPS = frozenset(sources.DISK_FIELDS.index(f) for f in ("rms", "wms", "io_ms", "weighted_ms"))
DISK_METRICS = ("rs", "ws", "rMBs", "wMBs", "rrqm", "wrqm", "rareq-sz", "wareq-sz", "r_await",
                "w_await", "util", "aqu-sz")  # fmt: skip


@dataclass
class ThreadCPU:
    tid: int
    name: str
    cpu: float  # percent of one core over the interval


@dataclass
class ProcessCPU:
    pid: int
    name: str
    cpu: float  # percent of one core (200 = two cores busy)
    threads: int
    state: str
    voluntary_cs: float | None = None  # per second
    involuntary_cs: float | None = None
    busiest_threads: list[ThreadCPU] = field(default_factory=list)


@dataclass
class Snapshot:
    """One interval's metrics. `metrics` holds what this machine can measure; `unavailable`
    names A-Tune's metrics it cannot (hardware counters on a VM, memory bandwidth)."""

    time: float  # end of the interval, Unix seconds
    interval: float  # seconds
    metrics: dict[str, float]
    unavailable: tuple[str, ...] = ()
    processes: list[ProcessCPU] = field(default_factory=list)
    disk: str = ""
    network: str = ""

    def atune_row(self) -> list[float | None]:
        """The 52 values in A-Tune's column order (None where unavailable)."""
        return [self.metrics.get(name) for name in ATUNE_METRICS]


@dataclass
class _Reading:
    at: float
    stat: sources.Stat
    load: sources.LoadAvg
    own_running: int  # hone's own runnable threads, counted in stat.running and load.runnable
    disks: dict[str, tuple[int, ...]]
    nets: dict[str, tuple[int, ...]]
    vmstat: dict[str, int]
    pressure: dict[str, int]
    tasks: dict[int, sources.Task] | None
    perf: dict[str, float] | None


class Collector:
    """Reads counters and turns consecutive readings into snapshots.

    `processes=False` skips the per-process scan (the only part whose cost grows with the
    number of processes); `top` processes are reported, and the threads and context switches
    of the busiest `thread_top` of them."""

    def __init__(
        self,
        *,
        disk: str | None = None,
        network: str | None = None,
        processes: bool = True,
        top: int = 10,
        thread_top: int = 3,
        hardware: bool | None = None,
    ) -> None:
        from hone.project.devices import device_environment

        self.disk = disk or device_environment()["HONE_DISK"]
        self.network = network or "all"
        self.processes = processes
        self.top = top
        self.thread_top = thread_top
        self._disks = sources.whole_disks()
        self._speeds = {name: sources.link_speed_mbits(name) for name in sources.read_netdev()}
        if hardware is None:
            hardware = hardware_counters_available()
        self._perf = PerfCounters() if hardware else None
        self._previous: _Reading | None = None
        self._threads: dict[int, dict[int, sources.Task]] = {}
        self._switches: dict[int, tuple[int, int]] = {}

    def close(self) -> None:
        if self._perf is not None:
            self._perf.close()
            self._perf = None

    def __enter__(self) -> Collector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def unavailable(self) -> tuple[str, ...]:
        missing = ["MEM.BANDWIDTH.Total_Util"]
        if self._perf is None:
            missing += list(PERF_METRICS)
        if self.disk not in self._disks:
            missing += [f"STORAGE.STAT.{m}" for m in DISK_METRICS]
        return tuple(missing)

    # -- readings ----------------------------------------------------------------------------

    def _read(self) -> _Reading:
        return _Reading(
            at=time.monotonic(),
            stat=sources.read_stat(),
            load=sources.read_loadavg(),
            own_running=sources.own_running(),
            disks=sources.read_diskstats(self._disks),
            nets=sources.read_netdev(),
            vmstat=sources.read_vmstat(),
            pressure=sources.read_pressure(),
            tasks=sources.read_tasks() if self.processes else None,
            perf=self._perf.totals() if self._perf is not None else None,
        )

    def prime(self) -> None:
        """Take the first reading; the next `sample()` returns the interval since it."""
        self._previous = self._read()

    def sample(self, interval: float = 1.0) -> Snapshot:
        """The snapshot since the previous reading, waiting until it is `interval` old."""
        if self._previous is None:
            self.prime()
        assert self._previous is not None
        remaining = self._previous.at + interval - time.monotonic()
        if remaining > 0:
            time.sleep(remaining)
        return self._take()

    def _take(self) -> Snapshot:
        assert self._previous is not None
        current = self._read()
        snapshot = self._snapshot(self._previous, current)
        self._previous = current
        return snapshot

    def stream(
        self, interval: float = 1.0, *, count: int | None = None, duration: float | None = None
    ) -> Iterator[Snapshot]:
        """A snapshot every `interval` seconds on a fixed schedule (no drift), until `count`
        snapshots or `duration` seconds, else forever (a duration too many intervals long to
        count, `-d 1e308 -i 1e-300`, is forever too). A duration is the time it takes: an
        interval shorter than a reading (`-i 0.0001 -d 1`: 10,000 readings of about 3 ms) ends
        an interval past the duration with fewer snapshots, two at least, not 30 s later."""
        deadline = None
        if duration is not None and math.isfinite(duration / interval):
            count = max(1, round(duration / interval))
        self.prime()
        start = time.monotonic()
        if duration is not None:
            deadline = start + duration
        emitted = 0
        while count is None or emitted < count:
            emitted += 1
            delay = start + emitted * interval - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            yield self._take()
            # a whole interval past the duration: readings are slower than the interval (a
            # reading a little late on a loaded machine still gets its last sample)
            if deadline is not None and emitted >= 2 and time.monotonic() >= deadline + interval:
                return

    # -- metrics -----------------------------------------------------------------------------

    def _snapshot(self, before: _Reading, after: _Reading) -> Snapshot:
        dt = max(after.at - before.at, 1e-6)
        metrics: dict[str, float] = {}
        metrics.update(_cpu(before.stat, after.stat))
        metrics.update(self._storage(before.disks, after.disks, dt))
        metrics.update(self._network(before.nets, after.nets, dt))
        metrics.update(_memory(before, after, dt))
        metrics.update(_system(before.stat, after, dt))
        metrics.update(_pressure(before.pressure, after.pressure, dt))
        if before.perf is not None and after.perf is not None:
            delta = {k: after.perf[k] - before.perf.get(k, 0.0) for k in after.perf}
            metrics.update({k: v for k, v in derived(delta).items() if v is not None})
        processes = self._processes(before, after, dt)
        return Snapshot(
            time=time.time(),
            interval=dt,
            metrics=metrics,
            unavailable=self.unavailable,
            processes=processes,
            disk=self.disk,
            network=self.network,
        )

    def _storage(
        self, before: dict[str, tuple[int, ...]], after: dict[str, tuple[int, ...]], dt: float
    ) -> dict[str, float]:
        metrics: dict[str, float] = {}
        for device, now in after.items():
            if device not in before:
                continue
            values = _disk(before[device], now, dt)
            for name, value in values.items():
                metrics[f"STORAGE.STAT.{name}[{device}]"] = value
                if device == self.disk:
                    metrics[f"STORAGE.STAT.{name}"] = value
        return metrics

    def _network(
        self, before: dict[str, tuple[int, ...]], after: dict[str, tuple[int, ...]], dt: float
    ) -> dict[str, float]:
        metrics: dict[str, float] = {}
        totals = dict.fromkeys(("rxkBs", "txkBs", "rxpcks", "txpcks", "errs", "drops"), 0.0)
        busiest = 0.0
        for name, now in after.items():
            if name not in before:
                continue
            d = dict(zip(sources.NET_FIELDS, _grown(now, before[name]), strict=True))
            values = {
                "rxkBs": d["rx_bytes"] / 1024 / dt,
                "txkBs": d["tx_bytes"] / 1024 / dt,
                "rxpcks": d["rx_packets"] / dt,
                "txpcks": d["tx_packets"] / dt,
                "errs": (d["rx_errs"] + d["tx_errs"]) / dt,
                "drops": (d["rx_drop"] + d["tx_drop"] + d["rx_fifo"] + d["tx_fifo"]) / dt,
            }
            speed = self._speeds.get(name)
            util = (
                max(d["rx_bytes"], d["tx_bytes"]) * 8 / dt / (speed * 1e6) * 100 if speed else 0.0
            )
            for key in ("rxkBs", "txkBs", "rxpcks", "txpcks"):
                metrics[f"NET.STAT.{key}[{name}]"] = values[key]
            metrics[f"NET.STAT.ifutil[{name}]"] = util
            metrics[f"NET.ESTAT.errs[{name}]"] = values["errs"]
            metrics[f"NET.ESTAT.util[{name}]"] = values["drops"]
            if self.network in ("all", name):
                for key in totals:
                    totals[key] += values[key]
                busiest = max(busiest, util)
        for key in ("rxkBs", "txkBs", "rxpcks", "txpcks"):
            metrics[f"NET.STAT.{key}"] = totals[key]
        metrics["NET.STAT.ifutil"] = busiest
        metrics["NET.ESTAT.errs"] = totals["errs"]
        metrics["NET.ESTAT.util"] = totals["drops"]
        return metrics

    def _processes(self, before: _Reading, after: _Reading, dt: float) -> list[ProcessCPU]:
        """The busiest processes but hone's own: on a quiet machine the collector was one."""
        if before.tasks is None or after.tasks is None:
            return []
        scale = 100.0 / sources.CLOCK_TICKS / dt
        busy = []
        for pid, task in after.tasks.items():
            old = before.tasks.get(pid)
            if old is not None and old.name == task.name and pid != os.getpid():
                busy.append(ProcessCPU(pid, task.name, (task.ticks - old.ticks) * scale,
                                       task.threads, task.state))  # fmt: skip
        busy.sort(key=lambda p: p.cpu, reverse=True)
        busy = busy[: self.top]
        threads: dict[int, dict[int, sources.Task]] = {}
        switches: dict[int, tuple[int, int]] = {}
        for process in busy[: self.thread_top]:
            threads[process.pid] = now_threads = sources.read_threads(process.pid)
            old_threads = self._threads.get(process.pid, {})
            process.busiest_threads = sorted(
                (
                    ThreadCPU(tid, t.name, (t.ticks - old_threads[tid].ticks) * scale)
                    for tid, t in now_threads.items()
                    if tid in old_threads
                ),
                key=lambda t: t.cpu,
                reverse=True,
            )[:5]
            counts = sources.read_context_switches(process.pid)
            if counts is not None:
                switches[process.pid] = counts
                if process.pid in self._switches:
                    old_counts = self._switches[process.pid]
                    process.voluntary_cs = (counts[0] - old_counts[0]) / dt
                    process.involuntary_cs = (counts[1] - old_counts[1]) / dt
        self._threads, self._switches = threads, switches
        return busy


def _delta(after: tuple[int, ...], before: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(a - b for a, b in zip(after, before, strict=True))


def _grown(
    after: tuple[int, ...], before: tuple[int, ...], wraps: frozenset[int] = frozenset()
) -> tuple[int, ...]:
    """How much each counter of a device grew. One that went back was reset, the device
    removed and made again under its name (a container's veth, a re-attached disk): it grew
    by its new value, as sysstat counts it. The fields at `wraps` are 32 bits in the kernel's
    file and wrap: /proc/diskstats' milliseconds, whose queue time (aqu-sz) passes 2^32 in a
    day and a half of a queue of 32."""
    return tuple(
        a - b if a >= b else (a - b) % 2**32 if i in wraps else a
        for i, (a, b) in enumerate(zip(after, before, strict=True))
    )


def _cpu_shares(before: tuple[int, ...], after: tuple[int, ...]) -> dict[str, float]:
    """mpstat's percentages: guest time is inside user time in /proc/stat, so it is taken out."""
    d = dict(zip(sources.CPU_FIELDS, _delta(after, before), strict=False))
    for name in sources.CPU_FIELDS:
        d.setdefault(name, 0)
    usr = d["user"] - d["guest"]
    nice = d["nice"] - d["guest_nice"]
    parts = (usr, nice, d["system"], d["idle"], d["iowait"], d["irq"], d["softirq"], d["steal"])
    total = sum(parts) + d["guest"] + d["guest_nice"]
    if total <= 0:
        return dict.fromkeys(
            ("usr", "nice", "sys", "iowait", "irq", "soft", "steal", "guest", "idle", "util"), 0.0
        )
    pct = 100.0 / total
    shares = {
        "usr": max(usr, 0) * pct,
        "nice": max(nice, 0) * pct,
        "sys": d["system"] * pct,
        "iowait": d["iowait"] * pct,
        "irq": d["irq"] * pct,
        "soft": d["softirq"] * pct,
        "steal": d["steal"] * pct,
        "guest": d["guest"] * pct,
        "idle": d["idle"] * pct,
    }
    # from the ticks, not the rounded shares: a busy interval is 100 exactly, not 100.00000000000001
    busy = max(usr, 0) + max(nice, 0) + d["system"] + d["irq"] + d["softirq"] + d["steal"]
    shares["util"] = 100.0 * busy / total
    return shares


def _cpu(before: sources.Stat, after: sources.Stat) -> dict[str, float]:
    metrics = {f"CPU.STAT.{k}": v for k, v in _cpu_shares(before.total, after.total).items()}
    busy = []
    for name, now in after.cpus.items():
        if name in before.cpus:
            shares = _cpu_shares(before.cpus[name], now)
            metrics[f"CPU.STAT.util[{name}]"] = shares["util"]
            metrics[f"CPU.STAT.iowait[{name}]"] = shares["iowait"]
            if shares["util"] > CUTIL_THRESHOLD:
                busy.append(shares["util"])
    metrics["CPU.STAT.cutil"] = sum(busy) / len(busy) if busy else 0.0
    metrics["CPU.STAT.cores"] = float(len(after.cpus))
    return metrics


def _disk(before: tuple[int, ...], after: tuple[int, ...], dt: float) -> dict[str, float]:
    """iostat -x's columns for one device."""
    d = dict(zip(sources.DISK_FIELDS, _grown(after, before, DISK_WRAPS), strict=True))
    d["inflight"] = after[sources.DISK_FIELDS.index("inflight")]

    def per(top: float, bottom: float, scale: float = 1.0) -> float:
        return top / bottom * scale if bottom > 0 else 0.0

    return {
        "rs": d["reads"] / dt,
        "ws": d["writes"] / dt,
        "rMBs": d["rsectors"] * 512 / 1048576 / dt,
        "wMBs": d["wsectors"] * 512 / 1048576 / dt,
        "rrqm": per(d["rmerged"], d["rmerged"] + d["reads"], 100),
        "wrqm": per(d["wmerged"], d["wmerged"] + d["writes"], 100),
        "rareq-sz": per(d["rsectors"] / 2, d["reads"]),
        "wareq-sz": per(d["wsectors"] / 2, d["writes"]),
        "r_await": per(d["rms"], d["reads"]),
        "w_await": per(d["wms"], d["writes"]),
        "util": min(d["io_ms"] / (dt * 1000) * 100, 100.0),
        "aqu-sz": d["weighted_ms"] / (dt * 1000),
    }


def _memory(before: _Reading, after: _Reading, dt: float) -> dict[str, float]:
    meminfo = sources.read_meminfo()
    vm0, vm1 = before.vmstat, after.vmstat

    def rate(key: str, scale: float = 1.0) -> float:
        return (vm1.get(key, 0) - vm0.get(key, 0)) * scale / dt

    cpu = _cpu_shares(before.stat.total, after.stat.total)
    metrics = {f"MEM.MEMINFO.{k}": float(meminfo[k]) for k in MEMINFO_KEYS if k in meminfo}
    si, so = rate("pswpin", sources.PAGE_KIB), rate("pswpout", sources.PAGE_KIB)
    metrics.update(
        {
            # procs_running counts the reader itself, always running as it reads, and any other
            # thread of hone's on a CPU: left out, as vmstat leaves itself out, else one busy
            # thread on two CPUs reads as a queue and an idle machine as one busy task
            "MEM.VMSTAT.procs.r": float(max(after.stat.running - after.own_running, 0)),
            "MEM.VMSTAT.procs.b": float(after.stat.blocked),
            "MEM.VMSTAT.memory.swpd": float(
                meminfo.get("SwapTotal", 0) - meminfo.get("SwapFree", 0)
            ),
            "MEM.VMSTAT.memory.free": float(meminfo.get("MemFree", 0)),
            "MEM.VMSTAT.io.bi": rate("pgpgin"),
            "MEM.VMSTAT.io.bo": rate("pgpgout"),
            "MEM.VMSTAT.swap.si": si,
            "MEM.VMSTAT.swap.so": so,
            "MEM.VMSTAT.system.in": (after.stat.interrupts - before.stat.interrupts) / dt,
            "MEM.VMSTAT.system.cs": (after.stat.ctxt - before.stat.ctxt) / dt,
            "MEM.VMSTAT.util.swap": si + so,
            "MEM.VMSTAT.util.cpu": float(
                round(cpu["usr"] + cpu["nice"]) + round(cpu["sys"]) + round(cpu["steal"])
            ),
            "MEM.VMSTAT.pgfault": rate("pgfault"),
            "MEM.VMSTAT.pgmajfault": rate("pgmajfault"),
        }
    )
    return metrics


def _system(before: sources.Stat, now: _Reading, dt: float) -> dict[str, float]:
    after, load = now.stat, now.load
    allocated, maximum = sources.read_file_nr()
    return {
        "SYS.TASKS.procs": (after.forks - before.forks) / dt,
        "SYS.TASKS.cswchs": (after.ctxt - before.ctxt) / dt,
        # runnable tasks but hone's own (sar's runq-sz leaves out sadc, the reader, likewise)
        "SYS.LDAVG.runq-sz": float(max(load.runnable - now.own_running, 0)),
        "SYS.LDAVG.plist-sz": float(load.tasks),
        "SYS.LDAVG.ldavg-1": load.ldavg1,
        "SYS.LDAVG.ldavg-5": load.ldavg5,
        "SYS.LDAVG.ldavg-15": load.ldavg15,
        "SYS.FDUTIL.fd-util": allocated / maximum * 100 if maximum else 0.0,
        "SYS.FDUTIL.allocated": float(allocated),
    }


def _pressure(before: dict[str, int], after: dict[str, int], dt: float) -> dict[str, float]:
    """Share of the interval (percent) in which some / all runnable tasks were stalled."""
    return {
        f"PSI.{key.split('.')[0].upper()}.{key.split('.')[1]}": min(
            (after[key] - before[key]) / (dt * 1e6) * 100, 100.0
        )
        for key in after
        if key in before
    }


def sample(interval: float = 1.0, **options: object) -> Snapshot:
    """One snapshot of the whole machine over `interval` seconds (see Collector for options)."""
    with Collector(**options) as collector:  # type: ignore[arg-type]
        return collector.sample(interval)


def stream(
    interval: float = 1.0,
    *,
    count: int | None = None,
    duration: float | None = None,
    **options: object,
) -> Iterator[Snapshot]:
    """Snapshots every `interval` seconds (a generator: a live view or an endpoint consumes it)."""
    with Collector(**options) as collector:  # type: ignore[arg-type]
        yield from collector.stream(interval, count=count, duration=duration)
