"""The machine's state beside every reading, and whether something else disturbed it.

A reading taken while another process ate a CPU, or while the hypervisor stole time, measures
the neighbour as much as the configuration. Around each benchmark run hone records the load
average, the steal share, the CPU time of processes outside hone's own tree and the CPU clock,
and calls the reading disturbed when the others' CPU rose well above what they used during the
baseline, or steal was high. The tuner re-measures a disturbed reading once (docs/trust.md)."""

from __future__ import annotations

import os
import resource
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

#: Other processes using this many CPUs more than during the baseline disturb a reading ...
OTHERS_CPU = 0.5
#: ... and so do half as many when there were also more runnable tasks, tasks waited for a
#: CPU more of the time, or the benchmark's own processes got less than half their usual CPU:
#: on a saturated machine a newcomer cannot take a whole CPU, but it queues and squeezes.
OTHERS_CPU_CONTENDED = 0.25
RUNNABLE = 0.75
CPU_WAIT_PERCENT = 25.0
OWN_CPU_SHARE = 0.5
#: How often the run queue is sampled during a reading (seconds).
SAMPLE_EVERY = 0.025
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
    waited: float | None  # seconds some task waited for a CPU (pressure stall information)


def _counters() -> _Counters:
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, idle, iowait, irq, softirq = fields[:7]
    steal = fields[7] if len(fields) > 7 else 0
    busy = user + nice + system + irq + softirq
    total = busy + idle + iowait + steal
    return _Counters(
        time.monotonic(), busy / _TICK, steal / _TICK, total / _TICK, _tree_cpu(), _cpu_waited()
    )


def _cpu_waited() -> float | None:
    try:
        line = Path("/proc/pressure/cpu").read_text().split("\n", 1)[0]
        return int(line.rsplit("total=", 1)[1]) / 1e6
    except (OSError, IndexError, ValueError):
        return None


def _tree_cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = me.ru_utime + me.ru_stime + reaped.ru_utime + reaped.ru_stime
    return seconds + sum(_cpu_of(pid) for pid in descendants(os.getpid()))


def descendants(pid: int) -> list[int]:
    """Living descendants, from the kernel's per-thread children lists (a walk of hone's own
    tree, not of every process: a few files instead of a scan of /proc)."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = list(Path(f"/proc/{parent}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except (OSError, ValueError):
                if parent == pid and not found:  # a kernel without the lists: ask psutil
                    return _psutil_descendants(pid)
                continue
            found.extend(children)
            todo.extend(children)
    return found


def _psutil_descendants(pid: int) -> list[int]:
    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


def _cpu_of(pid: int) -> float:
    """CPU seconds of a living process and of the children it has reaped (a server's finished
    workers: they left the tree without hone reaping them), 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(errors="replace").rsplit(")", 1)[1].split()
        return sum(int(x) for x in fields[11:15]) / _TICK
    except (OSError, IndexError, ValueError):
        return 0.0


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


def _running() -> int | None:
    """Tasks running or runnable right now, less the one reading this."""
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("procs_running"):
            return max(int(line.split()[1]) - 1, 0)
    return None


class Watch:
    """Counters at the start of a reading, and the run queue sampled while it lasts; `state()`
    at its end gives what happened between."""

    def __init__(self) -> None:
        self.start = _counters()
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(SAMPLE_EVERY):
            running = _running()
            if running is None:
                return
            self.samples.append(running)

    def state(self) -> dict[str, Any]:
        self._stop.set()
        self._thread.join()
        end = _counters()
        wall = max(end.wall - self.start.wall, 1e-6)
        busy = end.busy - self.start.busy
        mine = end.tree - self.start.tree
        total = max(end.total - self.start.total, 1e-6)
        state: dict[str, Any] = {
            "load1": round(os.getloadavg()[0], 2),
            "steal_pct": round((end.steal - self.start.steal) / total * 100.0, 1),
            "others_cpu": round(max(busy - mine, 0.0) / wall, 2),
            "own_cpu": round(mine / wall, 2),
        }
        if self.samples:
            state["runnable"] = round(sum(self.samples) / len(self.samples), 2)
        if end.waited is not None and self.start.waited is not None:
            state["cpu_wait_pct"] = round((end.waited - self.start.waited) / wall * 100.0, 1)
        mhz = _mhz()
        if mhz is not None:
            state["cpu_mhz"] = mhz
        return state


@dataclass(frozen=True)
class Quiet:
    """The machine's usual background: medians over the baseline readings."""

    others_cpu: float
    cpu_wait_pct: float | None
    runnable: float | None
    own_cpu: float | None = None

    @classmethod
    def of(cls, states: list[dict[str, Any]]) -> Quiet | None:
        def median(key: str) -> float | None:
            values = [s[key] for s in states if key in s]
            return _median(values) if values else None

        others = median("others_cpu")
        if others is None:
            return None
        return cls(others, median("cpu_wait_pct"), median("runnable"), median("own_cpu"))


def _above(state: dict[str, Any], quiet: Quiet, key: str, margin: float) -> bool:
    usual = getattr(quiet, key)
    return key in state and usual is not None and state[key] - usual > margin


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def disturbance(state: dict[str, Any], quiet: Quiet) -> str | None:
    """Why this reading was disturbed, in words, or None."""
    extra = state.get("others_cpu", 0.0) - quiet.others_cpu
    queued = _above(state, quiet, "runnable", RUNNABLE)
    waited = _above(state, quiet, "cpu_wait_pct", CPU_WAIT_PERCENT)
    squeezed = bool(quiet.own_cpu) and state.get("own_cpu", 0.0) < OWN_CPU_SHARE * quiet.own_cpu
    if extra > OTHERS_CPU or (extra > OTHERS_CPU_CONTENDED and (queued or waited or squeezed)):
        text = (
            f"other processes used {state['others_cpu']:.2f} CPUs (usually {quiet.others_cpu:.2f})"
        )
        if queued:
            text += f", {state['runnable']:.1f} runnable tasks (usually {quiet.runnable:.1f})"
        if squeezed:
            text += f", the benchmark got {state['own_cpu']:.2f} CPUs (usually {quiet.own_cpu:.2f})"
        return text
    if state.get("steal_pct", 0.0) > STEAL_PERCENT:
        return f"the hypervisor stole {state['steal_pct']:.0f} % of the CPU time"
    return None
