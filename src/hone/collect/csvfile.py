"""CSV files in A-Tune's layout: the 52 metric columns, then `workload.type` and
`workload.appname` (the labels A-Tune trains on). A metric this machine cannot measure is
written as -1, A-Tune's own mark for a counter that does not exist. With `extended`, hone's
further metrics (PSI, per-device, memory) go between the metrics and the labels, which keeps the
labels last, where A-Tune's trainer looks for them."""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import math
import operator
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from hone.collect.collector import ATUNE_METRICS, Snapshot
from hone.errors import HoneError

LABELS = ("workload.type", "workload.appname")
UNAVAILABLE = -1.0


def _open(path: Path) -> IO[str]:
    """A CSV to read, as UTF-8 whatever the locale, past a byte-order mark: a CSV saved by a
    spreadsheet begins with one, which made its first column `\ufeffCPU.STAT.usr`, a column
    no metric was read from (missing in every row, without a word)."""
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig", newline="")
    return open(path, encoding="utf-8-sig", newline="")


def _format(value: float | None) -> str:
    if value is None:
        return f"{UNAVAILABLE:g}"
    return f"{value:.6g}"


class _Sink:
    """A file written through os.write, every byte or an OSError: a buffered file would keep a
    row that did not fit and fail again at close, and gzip ignores a short write's count."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self.written = 0

    def write(self, data: bytes) -> int:
        view = memoryview(data)
        while view:
            done = os.write(self.fd, view)
            view, self.written = view[done:], self.written + done
        return len(data)

    def flush(self) -> None:
        """Nothing is held back (gzip calls it)."""


class CsvWriter:
    """Appends snapshots as rows; the header comes from the first snapshot.

    A file always ends with a whole row, so that `hone train` reads every row collected: each
    row goes out at once (a .gz one with a sync flush), and a row that does not fit (a full
    disk) is cut off again before the error is raised. A .gz file cut short by a kill has no
    gzip trailer; `read_table` reads its rows up to the cut."""

    def __init__(
        self,
        target: Path | IO[str],
        *,
        workload_type: str = "default",
        appname: str = "default",
        extended: bool = False,
    ) -> None:
        self.path = target if isinstance(target, Path) else None
        self._stream = None if isinstance(target, Path) else target
        self._sink = _Sink(target) if isinstance(target, Path) else None
        self._gzip: gzip.GzipFile | None = None
        self._kept = 0  # bytes of the file that end with a whole row
        self.rows = 0
        if self._sink is not None and target.suffix == ".gz":  # type: ignore[union-attr]
            try:  # the header is written now
                self._gzip = gzip.GzipFile(filename="", mode="wb", fileobj=self._sink)  # type: ignore[arg-type]
            except OSError as exc:
                self._cut(exc)
        self.labels = (workload_type, appname)
        self.extended = extended
        self.columns: list[str] | None = None

    def write(self, snapshot: Snapshot) -> None:
        lines = io.StringIO()
        out = csv.writer(lines, lineterminator="\n")
        if self.columns is None:
            extra = sorted(set(snapshot.metrics) - set(ATUNE_METRICS)) if self.extended else []
            columns = [*ATUNE_METRICS, *extra]
            out.writerow([*columns, *LABELS])
        else:
            columns = self.columns
        out.writerow([*(_format(snapshot.metrics.get(name)) for name in columns), *self.labels])
        self._put(lines.getvalue())
        self.columns = columns
        self.rows += 1

    def _put(self, text: str) -> None:
        if self._stream is not None:
            self._stream.write(text)
            self._stream.flush()
            return
        assert self._sink is not None
        try:
            if self._gzip is not None:
                self._gzip.write(text.encode())
                self._gzip.flush()  # a sync flush: everything so far can be decompressed
            else:
                self._sink.write(text.encode())
        except OSError as exc:
            self._cut(exc)
        self._kept = self._sink.written

    def _cut(self, exc: OSError) -> None:
        """Put the file back to its last whole row, close it and say how far it got."""
        assert self._sink is not None
        with contextlib.suppress(OSError):
            os.ftruncate(self._sink.fd, self._kept)
        os.close(self._sink.fd)
        self._sink = self._gzip = None  # a trailer would not match what the file now holds
        raise HoneError(
            f"{exc.strerror or exc}: stopped; the file keeps the {self.rows} samples written",
            file=self.path,
        ) from None

    def close(self) -> None:
        """Finish the file (a .gz one with its trailer); a stream is left open."""
        if self._sink is None:
            return
        try:
            if self._gzip is not None:
                self._gzip.close()
        except OSError as exc:  # no room for the trailer: the rows stay readable
            self._gzip = None
            self._cut(exc)
        finally:
            if self._sink is not None:
                os.close(self._sink.fd)
                self._sink = None

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
        with _open(path) as handle:
            reader = csv.reader(handle)
            header = next(reader, None)  # a file cut before its first line cannot be read
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
            if wanted and all(i is None for i in picks):
                # another program's CSV with two label columns: every metric would be missing
                raise HoneError(
                    f"no metric column ({', '.join(wanted[:3])}, ...): not a collection in "
                    "A-Tune's layout (hone collect -o)",
                    file=path,
                )
            type_at, app_at = index[LABELS[0]], index[LABELS[1]]
            # every wanted column present: the row's cells in one C-level pass (float() of each;
            # a row with an empty cell, or one float() refuses, goes through _number instead)
            pick = operator.itemgetter(*picks) if picks and None not in picks else None
            rows: list[list[float]] = []
            labels: list[tuple[str, str]] = []
            for number, record in enumerate(_whole_records(reader), 2):
                if len(record) != len(header):
                    if not record:
                        continue
                    raise HoneError(
                        f"{len(record)} fields, the header has {len(header)}",
                        file=path,
                        line=number,
                    )
                try:
                    row = _fast_row(pick(record)) if pick is not None else None
                    if row is None:
                        row = [_number(record[i]) if i is not None else NAN for i in picks]
                    rows.append(row)
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


def _whole_records(reader: Iterator[list[str]]) -> Iterator[list[str]]:
    """The records of a file; a .gz one cut short (its writer killed, no gzip trailer) ends at
    the cut, without the line the cut went through: the rows before it were measured whole."""
    try:
        yield from reader
    except EOFError:
        return


def _fast_row(cells: tuple[str, ...] | str) -> list[float] | None:
    """The cells as floats when each is a finite number (what _number gives for them), else
    None: an empty cell or any other text is left to _number, which says what it is."""
    if isinstance(cells, str):  # itemgetter of one column gives the cell itself
        cells = (cells,)
    try:
        row = list(map(float, cells))
    except ValueError:
        return None
    return None if any(map(math.isinf, row)) else row


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
