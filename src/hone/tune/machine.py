"""The machine's state beside every reading, and whether something else disturbed it.

A reading taken while another process ate a CPU, or while the hypervisor stole time, measures
the neighbour as much as the configuration. Around each benchmark run hone records the load
average, the steal share, the CPU time of processes outside hone's own tree and the CPU clock,
and calls the reading disturbed when the others' CPU rose well above what they used during the
baseline, or steal was high. The tuner re-measures a disturbed reading once (docs/trust.md)."""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

#: Other processes using this many CPUs more than during the baseline disturb a reading.
OTHERS_CPU = 0.5
#: Steal above this share of the CPU time (virtual machines) disturbs a reading.
STEAL_PERCENT = 10.0

_TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class _Counters:
    wall: float
    busy: float  # seconds of CPU time the whole machine spent busy (steal apart)
    steal: float
    total: float
    tree: float  # seconds of CPU time of hone and every descendant, living or reaped


def _counters() -> _Counters:
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, idle, iowait, irq, softirq = fields[:7]
    steal = fields[7] if len(fields) > 7 else 0
    busy = user + nice + system + irq + softirq
    total = busy + idle + iowait + steal
    return _Counters(time.monotonic(), busy / _TICK, steal / _TICK, total / _TICK, _tree_cpu())


def _tree_cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = me.ru_utime + me.ru_stime + reaped.ru_utime + reaped.ru_stime
    try:
        children = psutil.Process().children(recursive=True)
    except psutil.Error:
        children = []
    for child in children:
        try:
            times = child.cpu_times()
        except psutil.Error:
            continue
        seconds += times.user + times.system
    return seconds


def _mhz() -> float | None:
    """The mean current clock of the CPUs, where the kernel shows it."""
    speeds = []
    for path in Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_cur_freq"):
        try:
            speeds.append(int(path.read_text()) / 1000.0)
        except (OSError, ValueError):
            continue
    if not speeds:
        try:
            for line in Path("/proc/cpuinfo").read_text().splitlines():
                if line.startswith("cpu MHz"):
                    speeds.append(float(line.split(":")[1]))
        except (OSError, ValueError):
            return None
    return round(sum(speeds) / len(speeds), 1) if speeds else None


class Watch:
    """Counters at the start of a reading; `state()` at its end gives what happened between."""

    def __init__(self) -> None:
        self.start = _counters()

    def state(self) -> dict[str, Any]:
        end = _counters()
        wall = max(end.wall - self.start.wall, 1e-6)
        busy = end.busy - self.start.busy
        mine = end.tree - self.start.tree
        total = max(end.total - self.start.total, 1e-6)
        state: dict[str, Any] = {
            "load1": round(os.getloadavg()[0], 2),
            "steal_pct": round((end.steal - self.start.steal) / total * 100.0, 1),
            "others_cpu": round(max(busy - mine, 0.0) / wall, 2),
        }
        mhz = _mhz()
        if mhz is not None:
            state["cpu_mhz"] = mhz
        return state


def disturbance(state: dict[str, Any], quiet_others: float) -> str | None:
    """Why this reading was disturbed, in words, or None. `quiet_others`: what other processes
    used during the baseline (the machine's usual background)."""
    extra = state.get("others_cpu", 0.0) - quiet_others
    if extra > OTHERS_CPU:
        return f"other processes used {state['others_cpu']:.2f} CPUs (usually {quiet_others:.2f})"
    if state.get("steal_pct", 0.0) > STEAL_PERCENT:
        return f"the hypervisor stole {state['steal_pct']:.0f} % of the CPU time"
    return None
