"""Reading a tabular task (shared/spec/tabular-tasks.md) that nobody here has seen: its YAML
with YAML 1.2's booleans (a categorical value `off`, as the format's own example has it, stays
the CSV's text), and every mistake in either file as one line naming the file, the
line and the key, never a traceback halfway through a benchmark."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import yaml

from hone.project.yamlio import CoreSafeLoader

KNOB_TYPES = ("int", "float", "categorical", "bool")


class TaskError(ValueError):
    """A task file that cannot be read; its text is the one line to show."""


def load_spec(path: Path) -> dict[str, Any]:
    """The task's YAML, checked: knobs with a known type and values, an objective, and a
    default that is a point of the grid."""
    try:
        spec = yaml.load(path.read_text(encoding="utf-8-sig"), Loader=CoreSafeLoader)
    except OSError as exc:
        raise TaskError(f"{path}: cannot read: {exc.strerror}") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise TaskError(f"{where}: invalid YAML: {exc.problem or exc.context}") from None
    if not isinstance(spec, dict):
        raise TaskError(f"{path}: expected a mapping with knobs, objective and default")
    for section in ("knobs", "objective", "default"):
        if not isinstance(spec.get(section), dict) or not spec[section]:
            raise TaskError(f"{path}: {section}: missing or empty")
    for name, knob in spec["knobs"].items():
        if not isinstance(knob, dict) or knob.get("type") not in KNOB_TYPES:
            raise TaskError(f"{path}: knobs.{name}: type must be one of {', '.join(KNOB_TYPES)}")
        if not isinstance(knob.get("values"), list) or not knob["values"]:
            raise TaskError(f"{path}: knobs.{name}: values must be a non-empty list")
    objective = spec["objective"]
    if not isinstance(objective.get("metric"), str):
        raise TaskError(f"{path}: objective.metric: missing")
    if objective.get("direction") not in ("maximize", "minimize"):
        raise TaskError(f"{path}: objective.direction: must be maximize or minimize")
    for name in spec["knobs"]:
        if name not in spec["default"]:
            raise TaskError(f"{path}: default.{name}: missing")
    return spec


def read_rows(
    path: Path, knobs: list[str], metric: str, typed
) -> list[tuple[dict[str, Any], float | None]]:
    """The CSV's measurements as (configuration, value or None for a failed one);
    `typed` turns a row's cells into a configuration, raising ValueError for a cell that is
    not one of its knob's values."""
    rows = []
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            missing = [c for c in [*knobs, metric] if c not in (reader.fieldnames or [])]
            if missing:
                raise TaskError(f"{path}:1: {missing[0]}: no such column")
            for row in reader:
                line = reader.line_num
                try:
                    config = typed(row)
                except (ValueError, KeyError) as exc:
                    raise TaskError(f"{path}:{line}: {exc.args[0]}") from None
                rows.append((config, reading(row[metric] or "", f"{path}:{line}: {metric}")))
    except OSError as exc:
        raise TaskError(f"{path}: cannot read: {exc.strerror}") from None
    return rows


def reading(cell: str, where: str, missing: tuple[str, ...] = ("",)) -> float | None:
    """A metric cell: a finite number, or None for one of the `missing` spellings (an empty
    cell: a failed measurement). `nan` or `inf` is refused rather than read: one would make
    its configuration's truth NaN, silently."""
    cell = cell.strip()
    if cell in missing:
        return None
    try:
        value = float(cell)
    except ValueError:
        raise TaskError(f"{where}: {cell!r} is not a number") from None
    if not math.isfinite(value):
        raise TaskError(
            f"{where}: {cell!r} is not a finite number (a missing one is an empty cell)"
        )
    return value
