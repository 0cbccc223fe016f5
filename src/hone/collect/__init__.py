"""System metrics read straight from the kernel, named as A-Tune names them.

from hone import collect
snapshot = collect.sample(1.0)            # one interval: snapshot.metrics["CPU.STAT.util"]
for snapshot in collect.stream(1.0, count=60):
    ...
"""

from hone.collect.collector import (
    ATUNE_METRICS,
    Collector,
    ProcessCPU,
    Snapshot,
    ThreadCPU,
    sample,
    stream,
)
from hone.collect.csvfile import LABELS, CsvWriter, Table, read_table

__all__ = [
    "ATUNE_METRICS",
    "LABELS",
    "Collector",
    "CsvWriter",
    "ProcessCPU",
    "Snapshot",
    "Table",
    "ThreadCPU",
    "read_table",
    "sample",
    "stream",
]
