"""Features that carry from one machine to another.

A-Tune's data comes from 100-core servers sampled every 5 s; hone's from whatever it runs on,
every second. Raw rates (interrupts/s, packets/s) mostly tell machines and load levels apart, so
each row becomes scale-free values: CPU shares in percent, ratios between metrics (sys share of
busy time, bytes per packet, context switches per packet, kB per disk request), and log1p of the
few counts whose size is the workload's own (disk requests, forks, run queue, tasks). Network
traffic, interrupts and context switches enter only as ratios: as log rates they let a model
learn which machine a run came from rather than what ran (held out by file on A-Tune's data,
dropping them lifts per-window accuracy from 0.911 to 0.942). Hardware counters and memory
bandwidth are left out of the default model: most machines (every VM) cannot measure them, and
a model that leans on them fails where they are missing; a model made with `hardware=True` adds
them, for machines that count them.

A window of rows (45 s) becomes the median and the standard deviation of every row feature:
`hone analyze` samples for a while, and how much a metric varies is part of a workload's
signature (a compile's fork bursts, a database's checkpoints). The median, not the mean: one
odd sample (a cron job, a checkpoint) must not move a window. 45 s, because on A-Tune's data
with files held out 45-60 s windows are named right more often than 15-30 s ones (0.956 against
0.949 at 15 s over seeds 0-5); A-Tune's own analysis also classifies a run of 20 samples."""

from __future__ import annotations

import numpy as np

from hone.analyze.window import WINDOW_SECONDS
from hone.collect import ATUNE_METRICS
from hone.collect.perf import PERF_METRICS

_AT = {name: i for i, name in enumerate(ATUNE_METRICS)}


def _log(x: np.ndarray) -> np.ndarray:
    return np.log1p(np.maximum(x, 0.0))


def _ratio(top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1.0), 0.0)


def _row_features(col) -> dict[str, np.ndarray]:  # type: ignore[no-untyped-def]
    busy = col("CPU.STAT.util")
    packets = col("NET.STAT.rxpcks") + col("NET.STAT.txpcks")
    net_kb = col("NET.STAT.rxkBs") + col("NET.STAT.txkBs")
    requests = col("STORAGE.STAT.rs") + col("STORAGE.STAT.ws")
    disk_mb = col("STORAGE.STAT.rMBs") + col("STORAGE.STAT.wMBs")
    switches = col("SYS.TASKS.cswchs")
    features = {
        f"cpu {k} %": col(f"CPU.STAT.{k}")
        for k in ("usr", "sys", "iowait", "irq", "soft", "steal", "guest", "util", "cutil")
    }
    features.update(
        {
            "sys share of busy": _ratio(col("CPU.STAT.sys"), busy),
            "softirq share of busy": _ratio(col("CPU.STAT.soft"), busy),
            "log disk requests/s": _log(requests),
            "log disk MB/s": _log(disk_mb),
            "disk read share": _ratio(col("STORAGE.STAT.rs"), requests),
            "log disk kB/request": _log(_ratio(disk_mb * 1024, requests)),
            "log disk await ms": _log(
                np.maximum(col("STORAGE.STAT.r_await"), col("STORAGE.STAT.w_await"))
            ),
            "disk util %": col("STORAGE.STAT.util"),
            "log disk queue": _log(col("STORAGE.STAT.aqu-sz")),
            "disk write merge %": col("STORAGE.STAT.wrqm"),
            "net bytes/packet": _ratio(net_kb * 1024, packets),
            "net tx share": _ratio(col("NET.STAT.txkBs"), net_kb),
            "log net tx/rx": np.log(_ratio(col("NET.STAT.txkBs") + 1, col("NET.STAT.rxkBs") + 1)),
            "log forks/s": _log(col("SYS.TASKS.procs")),
            "log switches per packet": _log(_ratio(switches, packets)),
            "log net kB per switch": _log(_ratio(net_kb, switches)),
            "log blocked tasks": _log(col("MEM.VMSTAT.procs.b")),
            "log pages out/s": _log(col("MEM.VMSTAT.io.bo")),
            "log run queue": _log(col("SYS.LDAVG.runq-sz")),
            "run queue per load": _ratio(col("SYS.LDAVG.runq-sz"), col("SYS.LDAVG.ldavg-1")),
            # threads on the machine: a database or a JVM keeps hundreds, busy or quiet
            "log tasks": _log(col("SYS.LDAVG.plist-sz")),
        }
    )
    return features


#: Names of the row features, in column order.
ROW_FEATURES = tuple(_row_features(lambda name: np.zeros(1)))
#: Hardware counters: features only for a model of machines that have them (a model made with
#: `hardware=True` is used only where perf counts them). Not A-Tune's memory bandwidth: hone's
#: collector has no source for it, and a model trained on A-Tune's values of it would be fed 0.
HARDWARE_METRICS = PERF_METRICS
HARDWARE_FEATURES = tuple(f"log {name}" for name in HARDWARE_METRICS)


def row_names(hardware: bool = False) -> tuple[str, ...]:
    return ROW_FEATURES + (HARDWARE_FEATURES if hardware else ())


def feature_names(hardware: bool = False) -> tuple[str, ...]:
    """The window features: the median, then the standard deviation, of each row feature."""
    rows = row_names(hardware)
    return tuple(f"{n} median" for n in rows) + tuple(f"{n} sd" for n in rows)


FEATURES = feature_names()


def row_features(values: np.ndarray, hardware: bool = False) -> np.ndarray:
    """rows x ATUNE_METRICS -> rows x row_names() (NaN, an unavailable metric, counts as 0)."""
    raw = np.atleast_2d(values)
    values = np.nan_to_num(raw, nan=0.0)
    features = _row_features(lambda name: values[:, _AT[name]])
    columns = [features[name] for name in ROW_FEATURES]
    if hardware:
        columns += [_log(values[:, _AT[name]]) for name in HARDWARE_METRICS]
    return np.column_stack(columns)


def window_rows(interval: float) -> int:
    return max(2, round(WINDOW_SECONDS / interval))


def window_features(rows: np.ndarray) -> np.ndarray:
    """One window's rows of row features -> its median and standard deviation per feature."""
    return np.concatenate([np.median(rows, axis=0), rows.std(axis=0)])


def window_starts(rows: int, interval: float, limit: int | None = None) -> np.ndarray:
    """First row of every window of a run (stride: half a window), at most `limit` of them,
    evenly spread. A run shorter than a window is one window (of two rows or more), as a
    shorter `hone analyze` is."""
    size = window_rows(interval)
    if 2 <= rows < size:
        return np.zeros(1, dtype=int)
    starts = np.arange(0, max(rows - size + 1, 0), max(1, size // 2))
    if limit is not None and len(starts) > limit:
        starts = starts[np.linspace(0, len(starts) - 1, limit).round().astype(int)]
    return starts


def windows(
    values: np.ndarray, interval: float, *, limit: int | None = None, hardware: bool = False
) -> np.ndarray:
    """The window features of a run's windows (see window_starts)."""
    rows = row_features(values, hardware)
    size = window_rows(interval)
    starts = window_starts(len(rows), interval, limit)
    if not len(starts):
        return np.empty((0, len(feature_names(hardware))))
    return np.array([window_features(rows[s : s + size]) for s in starts])
