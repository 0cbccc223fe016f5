"""Reading a tabular task (shared/spec/tabular-tasks.md) that nobody here has seen: its YAML
with every value the text written (a categorical value `off`, `010`, `1:30` or `null` is the
CSV's text, not a boolean, a number or nothing; numbers are read from their text by the knob's
type), and every mistake in either file as one line naming the file, the line and the key,
never a traceback halfway through a benchmark."""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path
from typing import Any

import yaml

KNOB_TYPES = ("int", "float", "categorical", "bool")
#: the keys of a task's YAML, of a knob and of the objective
KEYS = {
    "a task": ("knobs", "objective", "default"),
    "a knob": ("type", "values"),
    "the objective": ("metric", "direction"),
}


class TextLoader(yaml.BaseLoader):
    """Every value the text written (BaseLoader), merge keys applied as YAML's other loaders
    apply them: `b: {<<: *a}`, a knob written once and merged into another, was a knob with no
    type and no values."""

    flatten_mapping = yaml.constructor.SafeConstructor.flatten_mapping

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        self.flatten_mapping(node)
        return super().construct_mapping(node, deep)


TextLoader.add_implicit_resolver("tag:yaml.org,2002:merge", re.compile(r"^<<$"), ["<"])


class TaskError(ValueError):
    """A task file that cannot be read; its text is the one line to show."""


class BadValue(ValueError):
    """A cell or a default that is not one of its knob's values."""

    def __init__(self, knob: str, why: str) -> None:
        super().__init__(f"{knob}: {why}")
        self.knob, self.why = knob, why


class Where:
    """Names the place of a key of the task's YAML: `t.yaml:5: default.threads`."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines: dict[tuple[str, ...], int] = {}
        self._note(yaml.compose(text, Loader=TextLoader), ())

    def _note(self, node: yaml.Node | None, keys: tuple[str, ...]) -> None:
        for key, value in node.value if isinstance(node, yaml.MappingNode) else []:
            inner = (*keys, str(key.value))
            if inner in self.lines:  # YAML keeps the last silently: a knob pasted twice
                first = self.lines[inner]
                raise TaskError(f"{self.path}:{key.start_mark.line + 1}: {'.'.join(inner)}: "
                                f"given twice (first at line {first})")  # fmt: skip
            self.lines[inner] = key.start_mark.line + 1
            self._note(value, inner)

    def __call__(self, *keys: Any) -> str:
        """The file, the line of the deepest of `keys` written in it, and the keys."""
        texts = tuple(str(k) for k in keys)
        line = next((self.lines[texts[:n]] for n in range(len(texts), 0, -1)
                     if texts[:n] in self.lines), None)  # fmt: skip
        return f"{self.path}{'' if line is None else f':{line}'}: {'.'.join(texts)}"

    def missing(self, mapping: dict, keys: tuple[str, ...], what: str, key: str) -> TaskError:
        """`key` of `mapping` (at `keys`) is missing or empty: the line of a key of that
        mapping that is none of `what`'s, likely the missing one misspelt, else the mapping's."""
        stray = next((k for k in mapping if k not in KEYS[what]), None)
        if stray is None:
            return TaskError(f"{self(*keys, key)}: missing or empty")
        expected = ", ".join(KEYS[what])
        return TaskError(
            f"{self(*keys, stray)}: not a key of {what} ({expected}); {key} is missing"
        )


def load_spec(path: Path) -> tuple[dict[str, Any], Where]:
    """The task's YAML, checked: knobs with a known type and values, an objective, and a
    default that is a point of the grid; and where each of its keys is written. Every value
    is the text written (YAML's BaseLoader): YAML's own types for unquoted values (1.1's
    `off` a boolean, `010` octal 8, `1:30` the number 90, `null` nothing) were not what the
    CSV holds; a knob's type says how its text reads."""
    text = read_text(path)
    try:
        spec = yaml.load(text, Loader=TextLoader)
        at = Where(path, text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise TaskError(f"{where}: invalid YAML: {exc.problem or exc.context}") from None
    if not isinstance(spec, dict):
        raise TaskError(f"{path}:1: expected a mapping with knobs, objective and default")
    for section in KEYS["a task"]:
        if spec.get(section) and not isinstance(spec[section], dict):  # a list, a text
            raise TaskError(f"{at(section)}: expected a mapping of names to values")
        if not spec.get(section):
            raise at.missing(spec, (), "a task", section)
    for name, knob in spec["knobs"].items():
        if not isinstance(knob, dict):
            raise TaskError(f"{at('knobs', name)}: expected {{type: ..., values: [...]}}")
        if "type" not in knob or "values" not in knob:
            raise at.missing(
                knob, ("knobs", name), "a knob", "type" if "values" in knob else "values"
            )
        if knob["type"] not in KNOB_TYPES:
            raise TaskError(f"{at('knobs', name, 'type')}: must be one of {', '.join(KNOB_TYPES)}")
        if not isinstance(knob["values"], list) or not knob["values"]:
            raise TaskError(f"{at('knobs', name, 'values')}: must be a non-empty list")
        if any(not isinstance(v, str) for v in knob["values"]):
            raise TaskError(f"{at('knobs', name, 'values')}: each value must be a single value")
    objective = spec["objective"]
    for key in KEYS["the objective"]:
        if not objective.get(key):
            raise at.missing(objective, ("objective",), "the objective", key)
    if objective["metric"] in spec["knobs"]:  # its values would be read as the readings
        raise TaskError(f"{at('objective', 'metric')}: {objective['metric']} is a knob")
    if objective["direction"] not in ("maximize", "minimize"):
        raise TaskError(f"{at('objective', 'direction')}: must be maximize or minimize")
    for name in spec["knobs"]:
        if name not in spec["default"]:
            raise TaskError(f"{at('default', name)}: missing")
    for name in spec["default"]:
        if name not in spec["knobs"]:  # a misspelt knob would set nothing, silently
            raise TaskError(f"{at('default', name)}: not one of the knobs")
    return spec, at


def read_rows(
    path: Path, knobs: list[str], metric: str, typed
) -> list[tuple[dict[str, Any], float | None]]:
    """The CSV's measurements as (configuration, value or None for a failed one);
    `typed` turns a row's cells into a configuration, raising ValueError for a cell that is
    not one of its knob's values."""
    rows = []
    reader = csv.reader(io.StringIO(read_text(path), newline=""))
    header = [name.strip() for name in next(reader, [])]  # `a, b, ops` as written by hand
    if not any(header):
        raise TaskError(f"{path}:1: no header: the knobs' names, then the metrics'")
    missing = [c for c in [*knobs, metric] if c not in header]
    if missing:
        # one cell holding every name: a table separated by semicolons or tabs
        apart = next((c for c in ";\t|" if len(header) == 1 and c in header[0]), None)
        hint = f" (the header is one cell: columns are separated by commas, not {apart!r})"
        raise TaskError(f"{path}:1: {missing[0]}: no such column{hint if apart else ''}")
    twice = next((c for c in header if header.count(c) > 1), None)
    if twice is not None:  # which of the two holds the readings is anyone's guess
        raise TaskError(f"{path}:1: {twice}: two columns of that name")
    for cells in reader:
        line = reader.line_num
        if len(cells) < 2 and not "".join(cells).strip():
            continue  # an empty line, or one of spaces an editor left at the end
        if len(cells) != len(header):  # a cut or shifted row: its cells would be misread
            raise TaskError(f"{path}:{line}: {len(cells)} cells, the header has {len(header)}")
        row = dict(zip(header, cells, strict=True))
        try:
            config = typed(row)
        except (ValueError, KeyError) as exc:
            raise TaskError(f"{path}:{line}: {exc.args[0]}") from None
        rows.append((config, reading(row[metric], f"{path}:{line}: {metric}")))
    if not rows:
        raise TaskError(f"{path}:2: no rows below the header")
    return rows


def task_name(path: Path) -> str:
    """A task file's name without its suffix (.yaml, .yml, .csv, .csv.gz): `nginx-1.22.yaml`
    is nginx-1.22 (the text before the first dot would be nginx-1, as for nginx-1.24.yaml)."""
    for suffix in (".csv.gz", ".csv", ".yaml", ".yml"):
        if path.name.endswith(suffix) and path.name != suffix:
            return path.name[: -len(suffix)]
    return path.name


def read_text(path: Path) -> str:
    """A task file's text (a UTF-8 byte order mark dropped); a file that cannot be read or is
    not UTF-8 is one line naming it (and the line of the first bad byte)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TaskError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TaskError(f"{path}:{line}: not UTF-8 text (byte {data[exc.start]:#04x})") from None


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
