"""A sampled table of a real system's configurations and their measured performance.

Column conventions of the two sources: PromiseTune marks its objective `$<NAME` (minimised);
moot ends each objective's name in `+` (maximised) or `-` (minimised). Every other column is a
knob. The objective is the table's FIRST objective column, one rule for every table: both
sources put the system's own performance measure (run time, throughput, PSNR) before the
secondary ones (latency, energy, CPU). Constant columns are not knobs (nothing to tune); rows
repeating a configuration are averaged. A row whose objective or any knob is empty or `?`
(moot's unknown) is not a configuration that can be run and is left out; any other cell that
is not a number where the objective needs one is a TaskError naming the file, line and column."""

from __future__ import annotations

import csv
import gzip
import io
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np

from benchmarks.tuners.tabular_io import TaskError, reading, task_name
from hone.space import Categorical, Config, Ordinal
from hone.space.domains import Domain


@dataclass
class Table:
    name: str
    objective: str
    minimize: bool
    knobs: dict[str, Domain]
    configs: list[Config]  # one per distinct configuration, in the table's order
    values: np.ndarray  # the objective per configuration (the mean of its rows)
    rows: int  # rows read (before averaging repeats)

    def fingerprint(self) -> bytes:
        """The table's content (knob values and objective), independent of names and order."""
        lines = sorted(
            repr([c[k] for k in self.knobs]) + f"{v:.9g}"
            for c, v in zip(self.configs, self.values, strict=True)
        )
        return "\n".join([str(self.minimize), *lines]).encode()


UNKNOWN = ("", "?")  # a cell with no value: empty, or moot's `?`


def is_objective(column: str) -> bool:
    return column.startswith("$<") or column.endswith(("+", "-"))


def read_table(source: Path | IO[bytes], name: str | None = None) -> Table:
    """Read a table (.csv or .csv.gz, or its bytes) in either source's conventions."""
    if isinstance(source, Path):
        name = name or task_name(source)
        try:
            raw = source.read_bytes()
        except OSError as exc:
            raise TaskError(f"{source}: cannot read: {exc.strerror}") from None
    else:
        raw = source.read()
    where = str(source) if isinstance(source, Path) else name
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise TaskError(f"{where}: not a whole gzip file: {exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise TaskError(f"{where}: not a UTF-8 text table") from None
    reader = csv.reader(io.StringIO(text))
    header = [h.strip() for h in next(reader, [])]
    goals = [i for i, h in enumerate(header) if is_objective(h)]
    if not goals:
        raise TaskError(f"{where}:1: no objective column ($<NAME, NAME+ or NAME-)")
    goal = goals[0]
    knobs_at = [i for i in range(len(header)) if i not in goals]
    cells, values = [], []
    for row in reader:
        if not row:
            continue
        if len(row) != len(header):
            raise TaskError(
                f"{where}:{reader.line_num}: {len(row)} cells where the header has {len(header)}"
            )
        value = reading(row[goal], f"{where}:{reader.line_num}: {header[goal]}", UNKNOWN)
        knobs_row = [row[i].strip() for i in knobs_at]
        if value is None or any(c in UNKNOWN for c in knobs_row):
            continue  # no reading, or a configuration nobody can run
        cells.append(knobs_row)
        values.append(value)
    if not values:
        raise TaskError(f"{where}: {header[goal]}: no row has both a reading and every knob")
    knobs: dict[str, Domain] = {}
    columns: list[list] = []
    for j, i in enumerate(knobs_at):
        column = [c[j] for c in cells]
        try:
            typed: list = [_number(v) for v in column]
            domain: Domain = Ordinal(tuple(set(typed)))
        except ValueError:
            typed, domain = column, Categorical(tuple(sorted(set(column))))
        if len(set(typed)) > 1:
            knobs[header[i]] = domain
            columns.append(typed)
    if not knobs:  # one configuration (or one repeated): nothing a tuner could choose
        raise TaskError(f"{where}: no knob column takes two values: nothing to tune")
    sums: dict[tuple, list[float]] = {}
    for key, value in zip(zip(*columns, strict=True), values, strict=True):
        sums.setdefault(key, []).append(value)
    configs = [dict(zip(knobs, key, strict=True)) for key in sums]
    means = np.array([np.mean(v) for v in sums.values()])
    head = header[goal]
    minimize = head.startswith("$<") or head.endswith("-")
    objective = head[2:] if head.startswith("$<") else head[:-1]
    return Table(name or "table", objective, minimize, knobs, configs, means, len(values))


def _number(text: str) -> int | float:
    value = float(text)
    return int(value) if value.is_integer() else value
