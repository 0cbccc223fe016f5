"""Training data: CSV files in A-Tune's layout become labelled runs.

A run is the rows of one file with one label: rows of a run are one measurement, so accuracy is
measured with whole runs held out. Labels become hone's workload classes: a hone CSV carries the
class in `workload.type`; A-Tune's files carry a tuned-style type (`default`,
`throughput_performance`) and the application in `workload.appname`, which maps to a class here.
Anything else keeps its own name (a custom class from `hone train`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hone.collect import ATUNE_METRICS, read_table
from hone.errors import HoneError

#: hone's workload classes, each with a profile in hone/profiles/builtin/hone/.
CLASSES = (
    "idle", "compute", "memory", "storage", "web", "in-memory-database", "database",
    "virtualization",
)  # fmt: skip
#: Classes without a hone profile of their own, and the closest hone profile.
CLASS_PROFILES = {"big-data": "hone-storage", "messaging": "hone-storage"}
#: A-Tune's application labels (exact, or a prefix ending in `_`) and the class each belongs to.
ATUNE_APPS = {
    "default": "idle",
    "speccpu": "compute",
    "specjbb": "compute",
    "hpc": "compute",
    "encryption_": "compute",
    "hadoop_hdd": "big-data",
    "ceph": "storage",
    "mysql": "database",
    "mariadb": "database",
    "mariadb_docker": "database",
    "mariadb_kvm": "database",
    "redis": "in-memory-database",
    "nginx_": "web",
    "kvm": "virtualization",
}
#: Seconds between rows: A-Tune's collector samples every 5 s, hone's every second.
ATUNE_INTERVAL = 5.0
HONE_INTERVAL = 1.0
BUILTIN_DATA = Path(__file__).resolve().parent / "data"


@dataclass
class Run:
    """Rows of one file under one label: `values` is rows x ATUNE_METRICS (NaN: unavailable)."""

    source: str  # file name (the group for held-out evaluation)
    cls: str
    app: str
    values: np.ndarray
    interval: float
    collection: str = ""  # the folder it came from: one data set (A-Tune's, hone's, a user's)


def class_of(workload_type: str, app: str) -> str:
    if workload_type in CLASSES:
        return workload_type
    if app in ATUNE_APPS:
        return ATUNE_APPS[app]
    for prefix, cls in ATUNE_APPS.items():
        if prefix.endswith("_") and app.startswith(prefix):
            return cls
    return workload_type if workload_type not in ("default", "throughput_performance") else app


def require_classes(classes: list[str]) -> None:
    """Training needs two classes; `hone train` checks its runs before importing scikit-learn,
    and the fit checks again what the windows kept."""
    if not classes:
        raise HoneError("no labelled rows to train on: training needs two classes or more")
    if len(classes) < 2:
        raise HoneError(f"one class only ({classes[0]}): training needs two or more")


def load_runs(path: Path, interval: float) -> list[Run]:
    """The runs in one CSV file (a new run wherever the label changes)."""
    table = read_table(path, ATUNE_METRICS)
    if not table.rows:
        raise HoneError("no rows", file=path)
    values = np.asarray(table.rows, dtype=float)
    values[values < 0] = np.nan  # A-Tune writes -1 for a counter that does not exist
    runs: list[Run] = []
    start = 0
    for i in range(1, len(table.labels) + 1):
        if i == len(table.labels) or table.labels[i] != table.labels[start]:
            workload_type, app = table.labels[start]
            cls = class_of(workload_type.strip(), app.strip())
            if not cls:  # a class named '' was trained, and analyze named it in blank
                raise HoneError(
                    "no label: workload.type and workload.appname are empty (hone collect "
                    "--type CLASS)",
                    file=path,
                    line=start + 2,
                )
            runs.append(
                Run(
                    path.name,
                    cls,
                    app,
                    values[start:i],
                    interval,
                    str(path.parent),
                )
            )
            start = i
    return runs


def csv_files(paths: list[Path]) -> list[Path]:
    """CSV files named directly or found in folders (.csv and .csv.gz, not hidden ones)."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(
                p
                for p in path.iterdir()
                if p.name.endswith((".csv", ".csv.gz")) and not p.name.startswith(".")
            )
        elif path.is_file():
            found.append(path)
        else:
            raise HoneError("no such file or folder", file=path)
    if not found:
        raise HoneError(f"no CSV files in {', '.join(map(str, paths))}")
    # a file named twice (`runs/ runs/a.csv`) is one run: counted twice it outweighed the
    # class's other runs and was said to be two
    unique: dict[Path, Path] = {}
    for path in found:
        unique.setdefault(path.resolve(), path)
    return list(unique.values())


def atune_dataset() -> Path | None:
    """A-Tune's classification data: HONE_ATUNE_DATASET, else the corpus next to a checkout."""
    env = os.environ.get("HONE_ATUNE_DATASET")
    if env:
        return Path(env)
    beside = Path(__file__).resolve().parents[3].parent / "shared" / "atune-corpus" / "dataset"
    return beside if beside.is_dir() else None


def builtin_runs(*, atune: bool = True) -> list[Run]:
    """hone's own runs collected on real workloads (shipped), plus A-Tune's data if present."""
    runs = [r for p in csv_files([BUILTIN_DATA]) for r in load_runs(p, HONE_INTERVAL)]
    folder = atune_dataset() if atune else None
    if folder is not None:
        runs += [r for p in csv_files([folder]) for r in load_runs(p, ATUNE_INTERVAL)]
    return runs
