"""The bottleneck in USE terms (Brendan Gregg's method): for CPU, memory, disk and network,
how busy it is (utilisation), how much work waits for it (saturation) and what fails (errors).

Saturation is what names a bottleneck: a resource at 100 % with nothing queued is merely well
used. The signals are the kernel's own: run queue per core and CPU pressure (PSI); memory
pressure, swapping and major faults; the disk's queue and I/O pressure; dropped packets,
TCP retransmits and listen-queue drops. Errors: OOM kills, interface errors."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hone.collect import Snapshot

#: Counters read before and after sampling (deltas become error and saturation figures).
COUNTERS = (
    "vmstat.oom_kill", "Tcp.RetransSegs", "Tcp.OutSegs", "TcpExt.ListenDrops",
)  # fmt: skip

#: A metric's mean over the interval, by name.
Mean = Callable[[str], float]


@dataclass
class Resource:
    name: str
    utilisation: float  # percent
    utilisation_text: str
    saturation: float  # 0 = nothing waits, >= 1 = saturated (the worst of the signals)
    saturation_text: str
    errors: str

    @property
    def verdict(self) -> str:
        if self.saturation >= 1.0:
            return "saturated"
        if self.saturation >= 0.5 or self.utilisation >= 80:
            return "busy"
        return "ok"


def counters() -> dict[str, int]:
    from hone.collect import sources

    values = {f"vmstat.{k}": v for k, v in sources.read_vmstat().items() if k == "oom_kill"}
    values.update(sources.read_netstat())
    return {k: values.get(k, 0) for k in COUNTERS}


def _mean(snapshots: list[Snapshot], name: str) -> float:
    values = [s.metrics[name] for s in snapshots if name in s.metrics]
    return float(np.mean(values)) if values else 0.0


def resources(
    snapshots: list[Snapshot], before: dict[str, int], after: dict[str, int]
) -> list[Resource]:
    """USE figures over the sampled interval (means of the snapshots, deltas of counters)."""

    def m(name: str) -> float:
        return _mean(snapshots, name)

    seconds = sum(s.interval for s in snapshots) or 1.0
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in COUNTERS}
    cores = m("CPU.STAT.cores") or 1.0
    # procs.r counts the running tasks too: more than one per core is a queue
    runq = m("MEM.VMSTAT.procs.r") / cores
    psi_cpu, psi_mem, psi_io = m("PSI.CPU.some"), m("PSI.MEMORY.some"), m("PSI.IO.some")
    cpu = Resource(
        "CPU",
        m("CPU.STAT.util"),
        f"{m('CPU.STAT.util'):.0f}% (usr {m('CPU.STAT.usr'):.0f}, sys {m('CPU.STAT.sys'):.0f}, "
        f"steal {m('CPU.STAT.steal'):.0f})",
        max(runq / 1.5, psi_cpu / 50),
        f"run queue {runq:.1f}/core, PSI some {psi_cpu:.0f}%",
        "-",
    )
    total = m("MEM.MEMINFO.MemTotal")
    used = 100 * (1 - m("MEM.MEMINFO.MemAvailable") / total) if total else 0.0
    swapping = m("MEM.VMSTAT.swap.si") + m("MEM.VMSTAT.swap.so")
    memory = Resource(
        "memory",
        used,
        f"{used:.0f}% used",
        max(psi_mem / 10, swapping / 1024, m("MEM.VMSTAT.pgmajfault") / 100),
        f"PSI some {psi_mem:.1f}%, swap {swapping:.0f} kB/s, "
        f"major faults {m('MEM.VMSTAT.pgmajfault'):.0f}/s",
        f"{delta['vmstat.oom_kill']} OOM kills",
    )
    disks = [_disk(m, f"disk {device}".strip(), suffix, psi_io) for device, suffix in
             _disks(snapshots, m)]  # fmt: skip
    segments = max(delta["Tcp.OutSegs"], 1)
    retrans = delta["Tcp.RetransSegs"] / segments * 100
    # the kernel counts a full accept queue's refusal as an overflow and again as a drop
    # (tcp_listendrop): the drops, which hold the overflows, are the count
    listen_drops = delta["TcpExt.ListenDrops"]
    drops = m("NET.ESTAT.util")
    network = Resource(
        "network",
        m("NET.STAT.ifutil"),
        f"{m('NET.STAT.rxkBs') / 1024:.1f} MB/s in, {m('NET.STAT.txkBs') / 1024:.1f} MB/s out"
        + (f", busiest link {m('NET.STAT.ifutil'):.0f}%" if m("NET.STAT.ifutil") else ""),
        max(retrans / 2, listen_drops / seconds / 10, drops / 100),
        f"retransmits {retrans:.2f}%, listen drops {listen_drops}, drops {drops:.0f}/s",
        f"{m('NET.ESTAT.errs') * seconds:.0f} interface errors",
    )
    return [cpu, memory, *disks, network]


def _disks(snapshots: list[Snapshot], m: Mean) -> list[tuple[str, str]]:
    """Each disk to show, with the suffix of its metrics: `{disk}` always (A-Tune's columns),
    then every other disk that did I/O in the interval: a database's data disk is rarely the
    first one, and its queue must not be missing from the table."""
    main = snapshots[-1].disk if snapshots else ""
    shown = [(main, "")]
    others = sorted({key[len("STORAGE.STAT.util[") : -1] for s in snapshots for key in s.metrics
                     if key.startswith("STORAGE.STAT.util[")} - {main})  # fmt: skip
    for device in others:
        if m(f"STORAGE.STAT.rs[{device}]") + m(f"STORAGE.STAT.ws[{device}]") > 0:
            shown.append((device, f"[{device}]"))
    return shown


def _disk(m: Mean, name: str, suffix: str, psi_io: float) -> Resource:
    """One disk's row from its iostat figures (`suffix`: `[vdb]`, or none for `{disk}`)."""

    def d(metric: str) -> float:
        return m(f"STORAGE.STAT.{metric}{suffix}")

    return Resource(
        name,
        d("util"),
        f"{d('util'):.0f}% busy, {d('rs') + d('ws'):.0f} IOPS, {d('rMBs') + d('wMBs'):.1f} MB/s",
        max(d("aqu-sz") / 4, psi_io / 30),
        f"queue {d('aqu-sz'):.1f}, PSI some {psi_io:.0f}%, await "
        f"{max(d('r_await'), d('w_await')):.1f} ms",
        "-",
    )


def bottleneck(table: list[Resource]) -> Resource | None:
    """The most saturated resource, if any is saturated or busy with work queued."""
    worst = max(table, key=lambda r: (r.saturation, r.utilisation))
    return worst if worst.verdict != "ok" else None
