"""`hone collect --live`: a terminal view redrawn every interval (CPU, pressure, memory, each
disk and interface, the busiest processes and their threads), like top, iostat and sar -n DEV
at once, from the same snapshot the CSV gets."""

from __future__ import annotations

import time
from collections.abc import Iterable

from rich.console import Group
from rich.live import Live

from hone.collect.collector import Snapshot
from hone.output import DataTable, output_console


def _devices(metrics: dict[str, float], prefix: str) -> list[str]:
    return sorted(
        {k[k.index("[") + 1 : -1] for k in metrics if k.startswith(prefix) and k.endswith("]")}
    )


def render(snapshot: Snapshot) -> Group:
    m = snapshot.metrics

    def g(name: str) -> float:
        return m.get(name, 0.0)

    system = DataTable(title="system", title_justify="left", box=None, pad_edge=False)
    for column in ("cpu %", "usr", "sys", "iowait", "steal", "runq", "load1", "cs/s", "forks/s",
                   "psi cpu", "psi mem", "psi io", "mem used", "swap kB/s"):  # fmt: skip
        system.add_column(column, justify="right")
    total = g("MEM.MEMINFO.MemTotal")
    used = 100 * (1 - g("MEM.MEMINFO.MemAvailable") / total) if total else 0.0
    system.add_row(
        f"{g('CPU.STAT.util'):.1f}", f"{g('CPU.STAT.usr'):.1f}", f"{g('CPU.STAT.sys'):.1f}",
        f"{g('CPU.STAT.iowait'):.1f}", f"{g('CPU.STAT.steal'):.1f}",
        f"{g('SYS.LDAVG.runq-sz'):.0f}", f"{g('SYS.LDAVG.ldavg-1'):.2f}",
        f"{g('SYS.TASKS.cswchs'):.0f}", f"{g('SYS.TASKS.procs'):.0f}",
        f"{g('PSI.CPU.some'):.1f}%", f"{g('PSI.MEMORY.some'):.1f}%", f"{g('PSI.IO.some'):.1f}%",
        f"{used:.0f}%", f"{g('MEM.VMSTAT.swap.si') + g('MEM.VMSTAT.swap.so'):.0f}",
    )  # fmt: skip
    cpus = DataTable(title="CPUs", title_justify="left", box=None, pad_edge=False)
    names = _devices(m, "CPU.STAT.util[")
    for name in names:
        cpus.add_column(name, justify="right")
    cpus.add_row(*(f"{g(f'CPU.STAT.util[{n}]'):.0f}%" for n in names))
    disks = DataTable(title="disks", title_justify="left", box=None, pad_edge=False)
    for column in ("device", "r/s", "w/s", "rMB/s", "wMB/s", "r_await", "w_await", "aqu-sz",
                   "util %"):  # fmt: skip
        disks.add_column(column, justify="right")
    for d in _devices(m, "STORAGE.STAT.rs["):
        disks.add_row(d, *(f"{g(f'STORAGE.STAT.{k}[{d}]'):.1f}" for k in (
            "rs", "ws", "rMBs", "wMBs", "r_await", "w_await", "aqu-sz", "util")))  # fmt: skip
    nets = DataTable(title="network", title_justify="left", box=None, pad_edge=False)
    for column in ("interface", "rx kB/s", "tx kB/s", "rx pk/s", "tx pk/s", "errs/s", "drops/s"):
        nets.add_column(column, justify="right")
    for n in _devices(m, "NET.STAT.rxkBs["):
        nets.add_row(n, *(f"{g(f'{k}[{n}]'):.0f}" for k in (
            "NET.STAT.rxkBs", "NET.STAT.txkBs", "NET.STAT.rxpcks", "NET.STAT.txpcks",
            "NET.ESTAT.errs", "NET.ESTAT.util")))  # fmt: skip
    procs = DataTable(title="busiest processes", title_justify="left", box=None, pad_edge=False)
    for column in ("pid", "name", "cpu %", "threads", "state", "vcs/s", "ivcs/s",
                   "busiest threads"):  # fmt: skip
        procs.add_column(column, justify="left" if column in ("name", "busiest threads")
                         else "right")  # fmt: skip
    for p in snapshot.processes:
        threads = ", ".join(f"{t.name}:{t.tid} {t.cpu:.0f}%" for t in p.busiest_threads[:3])
        procs.add_row(
            str(p.pid), p.name, f"{p.cpu:.0f}", str(p.threads), p.state,
            "" if p.voluntary_cs is None else f"{p.voluntary_cs:.0f}",
            "" if p.involuntary_cs is None else f"{p.involuntary_cs:.0f}", threads,
        )  # fmt: skip
    return Group(system, "", cpus, "", disks, "", nets, "", procs)


def show(snapshots: Iterable[Snapshot]) -> None:
    """Redraw the view for every snapshot until the stream ends or Ctrl-C. Off a terminal
    (`| tee log`, a file) there is nothing to redraw: each view follows the last under its
    time, as `top -b` writes them (Rich's Live printed only the last view there)."""
    # off a terminal every column whole, not cut to 80 columns' `iow…`
    console = output_console()
    if not console.is_terminal:
        for snapshot in snapshots:
            console.print(time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(snapshot.time)))
            console.print(render(snapshot), "")
        return
    with Live(auto_refresh=False, screen=False, console=console) as live:
        for snapshot in snapshots:
            live.update(render(snapshot), refresh=True)
