"""Hardware counters through one long-running `perf stat` (never one process per sample).

When the machine has no hardware counters (most VMs), the PERF.* metrics are unavailable and
say so; nothing is made up. A-Tune's own definitions are kept, except its SBPI and SBPC, which
are instructions/instructions and a copy of IPC there: here they are backend stall cycles per
instruction and per cycle, which is what the names mean."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import threading
from collections.abc import Sequence
from functools import cache

HARDWARE_EVENTS = (
    "cycles",
    "instructions",
    "cache-references",
    "cache-misses",
    "dTLB-loads",
    "dTLB-load-misses",
    "iTLB-loads",
    "iTLB-load-misses",
    "stalled-cycles-backend",
)
PERF_METRICS = (
    "PERF.STAT.IPC",
    "PERF.STAT.CACHE-MISS-RATIO",
    "PERF.STAT.MPKI",
    "PERF.STAT.ITLB-LOAD-MISS-RATIO",
    "PERF.STAT.DTLB-LOAD-MISS-RATIO",
    "PERF.STAT.SBPI",
    "PERF.STAT.SBPC",
)


@cache
def hardware_counters_available() -> bool:
    """True when `perf stat` counts cycles and instructions system-wide on this machine."""
    if shutil.which("perf") is None:
        return False
    try:
        result = subprocess.run(
            ["perf", "stat", "-a", "-x,", "-e", "cycles,instructions", "--", "sleep", "0.01"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    counts = [line.split(",")[0] for line in result.stderr.splitlines() if "," in line]
    return len(counts) >= 2 and all(c.replace(".", "").isdigit() for c in counts[:2])


class PerfCounters:
    """Counts events system-wide with `perf stat -I`, accumulating totals in a reader thread;
    `totals()` gives cumulative counts, so any sampling interval can take differences."""

    def __init__(self, events: Sequence[str] = HARDWARE_EVENTS, period_ms: int = 250) -> None:
        self.events = tuple(events)
        self._totals: dict[str, float] = dict.fromkeys(self.events, 0.0)
        self._lock = threading.Lock()
        self._proc = subprocess.Popen(
            ["perf", "stat", "-a", "-x,", "-I", str(period_ms), "-e", ",".join(self.events)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        assert self._proc.stderr is not None
        for line in self._proc.stderr:
            parts = line.strip().split(",")
            if len(parts) < 4:
                continue
            count, event = parts[1], parts[3]
            try:
                value = float(count)
            except ValueError:
                continue  # <not counted>, <not supported>
            with self._lock:
                if event in self._totals:
                    self._totals[event] += value

    def totals(self) -> dict[str, float]:
        with self._lock:
            return dict(self._totals)

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self._proc.terminate()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._thread.join(timeout=5)


def derived(delta: dict[str, float]) -> dict[str, float | None]:
    """A-Tune's PERF.STAT metrics from event counts over one interval (None: no denominator)."""

    def ratio(top: str, bottom: str, scale: float = 1.0) -> float | None:
        below = delta.get(bottom, 0.0)
        return delta.get(top, 0.0) / below * scale if below > 0 else None

    return {
        "PERF.STAT.IPC": ratio("instructions", "cycles"),
        "PERF.STAT.CACHE-MISS-RATIO": ratio("cache-misses", "cache-references", 100),
        "PERF.STAT.MPKI": ratio("cache-misses", "instructions", 1000),
        "PERF.STAT.ITLB-LOAD-MISS-RATIO": ratio("iTLB-load-misses", "iTLB-loads", 100),
        "PERF.STAT.DTLB-LOAD-MISS-RATIO": ratio("dTLB-load-misses", "dTLB-loads", 100),
        "PERF.STAT.SBPI": ratio("stalled-cycles-backend", "instructions"),
        "PERF.STAT.SBPC": ratio("stalled-cycles-backend", "cycles"),
    }
