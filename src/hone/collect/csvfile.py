"""CSV files in A-Tune's layout: the 52 metric columns, then `workload.type` and
`workload.appname` (the labels A-Tune trains on). A metric this machine cannot measure is
written as -1, A-Tune's own mark for a counter that does not exist. With `extended`, hone's
further metrics (PSI, per-device, memory) go between the metrics and the labels, which keeps the
labels last, where A-Tune's trainer looks for them."""

from __future__ import annotations

import csv
import gzip
import io
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from hone.collect.collector import ATUNE_METRICS, Snapshot
from hone.errors import HoneError

LABELS = ("workload.type", "workload.appname")
UNAVAILABLE = -1.0


def _open(path: Path, mode: str) -> IO[str]:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, mode + "b"), newline="")  # type: ignore[arg-type]
    return open(path, mode, newline="")


def _format(value: float | None) -> str:
    if value is None:
        return f"{UNAVAILABLE:g}"
    return f"{value:.6g}"


class CsvWriter:
    """Appends snapshots as rows; the header comes from the first snapshot."""

    def __init__(
        self,
        target: Path | IO[str],
        *,
        workload_type: str = "default",
        appname: str = "default",
        extended: bool = False,
    ) -> None:
        self._own = isinstance(target, Path)
        self._file: IO[str] = _open(target, "w") if isinstance(target, Path) else target
        self._csv = csv.writer(self._file, lineterminator="\n")
        self.labels = (workload_type, appname)
        self.extended = extended
        self.columns: list[str] | None = None

    def write(self, snapshot: Snapshot) -> None:
        if self.columns is None:
            extra = sorted(set(snapshot.metrics) - set(ATUNE_METRICS)) if self.extended else []
            self.columns = [*ATUNE_METRICS, *extra]
            self._csv.writerow([*self.columns, *LABELS])
        row = [_format(snapshot.metrics.get(name)) for name in self.columns]
        self._csv.writerow([*row, *self.labels])
        self._file.flush()

    def close(self) -> None:
        if self._own:
            self._file.close()

    def __enter__(self) -> CsvWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class Table:
    """A CSV read back: metric columns, one row of floats per sample (NaN: empty),
    and the two labels per row."""

    path: Path
    columns: list[str]
    rows: list[list[float]]
    labels: list[tuple[str, str]]


def read_table(path: Path, columns: Iterable[str] | None = None) -> Table:
    """Read an A-Tune or hone CSV (optionally gzip); `columns` picks metrics (missing: NaN)."""
    try:
        with _open(path, "r") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if not header:
                raise HoneError("empty CSV file", file=path)
            missing = [label for label in LABELS if label not in header]
            if missing:
                raise HoneError(f"no {' or '.join(missing)} column", file=path)
            wanted = list(columns) if columns is not None else [
                name for name in header if name not in LABELS
            ]  # fmt: skip
            index = {name: i for i, name in enumerate(header)}
            picks = [index.get(name) for name in wanted]
            type_at, app_at = index[LABELS[0]], index[LABELS[1]]
            rows: list[list[float]] = []
            labels: list[tuple[str, str]] = []
            for number, record in enumerate(reader, 2):
                if len(record) != len(header):
                    if not record:
                        continue
                    raise HoneError(
                        f"{len(record)} fields, the header has {len(header)}",
                        file=path,
                        line=number,
                    )
                try:
                    rows.append([_number(record[i]) if i is not None else NAN for i in picks])
                except ValueError:
                    bad = next(i for i in picks if i is not None and _bad(record[i]))
                    raise HoneError(
                        f"{header[bad]}: {record[bad]!r} is not a finite number",
                        file=path,
                        line=number,
                    ) from None
                labels.append((record[type_at], record[app_at]))
    except (OSError, EOFError, gzip.BadGzipFile, UnicodeDecodeError) as exc:
        raise HoneError(f"cannot read CSV: {exc}", file=path) from None
    return Table(path, wanted, rows, labels)


NAN = float("nan")


def _number(text: str) -> float:
    """An empty cell is a metric not measured (NaN); any other text must be a number: a model
    trained on a damaged file would learn from gaps that are not in the data. An infinity
    (`inf`, or `1e400`, past a float) stopped the fit in a scikit-learn traceback."""
    value = float(text) if text.strip() else NAN
    if math.isinf(value):
        raise ValueError(text)
    return value


def _bad(text: str) -> bool:
    try:
        _number(text)
    except ValueError:
        return True
    return False
