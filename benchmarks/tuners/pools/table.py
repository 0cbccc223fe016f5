"""A sampled table of a real system's configurations and their measured performance.

Column conventions of the two sources: PromiseTune marks its objective `$<NAME` (minimised);
moot ends each objective's name in `+` (maximised) or `-` (minimised). Every other column is a
knob. The objective is the table's FIRST objective column, one rule for every table: both
sources put the system's own performance measure (run time, throughput, PSNR) before the
secondary ones (latency, energy, CPU). Constant columns are not knobs (nothing to tune); rows
repeating a configuration are averaged."""

from __future__ import annotations

import csv
import gzip
import io
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np

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


def is_objective(column: str) -> bool:
    return column.startswith("$<") or column.endswith(("+", "-"))


def read_table(source: Path | IO[bytes], name: str | None = None) -> Table:
    """Read a table (.csv or .csv.gz, or its bytes) in either source's conventions."""
    if isinstance(source, Path):
        name = name or source.name.split(".")[0]
        raw = source.read_bytes()
    else:
        raw = source.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    reader = csv.reader(io.StringIO(raw.decode()))
    header = [h.strip() for h in next(reader)]
    goals = [i for i, h in enumerate(header) if is_objective(h)]
    if not goals:
        raise ValueError(f"{name}: no objective column ($<NAME, NAME+ or NAME-)")
    goal = goals[0]
    knobs_at = [i for i in range(len(header)) if i not in goals]
    cells, values = [], []
    for row in reader:
        if not row or not row[goal].strip():
            continue  # a row without a reading (none in today's tables) measures nothing
        cells.append([row[i].strip() for i in knobs_at])
        values.append(float(row[goal]))
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
