"""Checks shared by both project formats: typed fields with file/line/key errors."""

from __future__ import annotations

import difflib
import math
import unicodedata
from collections.abc import Iterable
from typing import Any

from hone.errors import ActuationError
from hone.knobs import Actuator
from hone.project.yamlio import Node
from hone.shell import nested_interpreter
from hone.space import Domain


def expect_mapping(value: Any, parent: Node, key: str) -> Node:
    if not isinstance(value, Node):
        raise parent.error(key, f"must be a mapping (key: value lines), not {_shape(value)}")
    return value


def _shape(value: Any) -> str:
    """What YAML made of a value, in the file's words rather than Python's (not `NodeList`)."""
    if value is None:
        return "nothing"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "true/false"
    return "a number" if isinstance(value, int | float) else f"the text {str(value)[:40]!r}"


def check_keys(node: Node, allowed: Iterable[str], required: Iterable[str] = ()) -> None:
    """Unknown keys are typos until proven otherwise: name the closest known key."""
    allowed = list(allowed)
    for key in node:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise node.error(key, f"unknown key{hint}")
    for key in required:
        if key not in node or node[key] in (None, ""):
            raise node.error(None, f"missing required key {key!r}")


def text(node: Node, key: str, default: str | None = None) -> str | None:
    """A key's value as the text hone gives the system (a command, a path, a config key, a
    knob's default); None when it is absent or null, one line naming the key for a list or a
    mapping."""
    value = node.get(key, default)
    if isinstance(value, dict | list):
        raise node.error(key, "must be text")
    return _spelled(value)


def words(node: Node, key: str, values: Iterable[Any]) -> list[str]:
    """Values to write (a knob's choices, a command's arguments), each one scalar: a list, a
    mapping or a null would otherwise be written as Python prints it ("['a']", "None")."""
    result = []
    for value in values:
        found = None if isinstance(value, dict | list) else _spelled(value)
        if found is None:
            raise node.error(key, f"{value!r} is not one value (text or a number)")
        result.append(found)
    return result


def refuse_control(node: Node, key: str | None, said: str, what: str, tab: bool = False) -> str:
    """A name or a value is printed on every line that shows it: a control character in it (an
    escape that recolours the terminal and ends up in `| cat`, a line break that splits a table
    row) is refused. `tab`: a value may hold tabs (the kernel prints net.ipv4.tcp_rmem so)."""
    for char in said:
        if unicodedata.category(char) == "Cc" and not (tab and char == "\t"):
            error = node.error(key, f"{what} {said!r} holds a control character ({char!r})")
            error.key = None if key == said else key  # the line shows it quoted, not raw
            raise error
    return said


def _spelled(value: Any) -> str | None:
    """The one spelling of a YAML scalar as text: a boolean as `true` or `false`, as YAML 1.2
    writes it (`True` and `TRUE` are the same boolean to YAML; quote them to keep that
    spelling), never Python's `True`: a config file, a flag, a variable or a shell (where
    `true` is a command and `True` is not) wants what the user wrote."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def number(
    node: Node,
    key: str,
    default: float | None = None,
    *,
    integer: bool = False,
    low: float | None = None,
    high: float | None = None,
) -> Any:
    """A finite number from the file; whole numbers are counts (never negative, at most a
    billion) unless the caller gives bounds. NaN, infinities and absurd counts are refused here
    rather than failing, or hanging, in the middle of a run."""
    value = node.get(key)
    value = default if value is None else value  # `key:` with no value means the default
    if value is None:
        return None
    if integer:
        low = 0 if low is None else low
        high = 10**9 if high is None else high
    kind = "a whole number" if integer else "a number"
    try:
        if isinstance(value, bool):
            raise ValueError
        result = float(value)
        if not math.isfinite(result):
            raise ValueError
        if integer:
            if result != int(result):
                raise ValueError
            result = int(result)
    except (TypeError, ValueError, OverflowError):
        raise node.error(key, f"must be {kind}, not {value!r}") from None
    if (low is not None and result < low) or (high is not None and result > high):
        span = f"from {low:g}" + (f" to {high:g}" if high is not None else " up")
        raise node.error(key, f"must be {kind} {span}, not {value!r}")
    return result


def boolean(node: Node, key: str, default: bool) -> bool:
    value = node.get(key, default)
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in ("true", "yes", "on", "1"):
        return True
    if word in ("false", "no", "off", "0"):
        return False
    raise node.error(key, f"must be true or false (or yes/no, on/off, 1/0), not {value!r}")


def check_declared_values(
    node: Node, key: str, name: str, actuator: Actuator, domain: Domain
) -> None:
    """Every value the project itself declares must be one its actuator may write (a shell set
    command that hands `$value` to sed or `sh -c` takes plain words only)."""
    for value in domain.values() or ():
        try:
            actuator.check_value(value if isinstance(value, str) else domain.format(value))
        except ActuationError as exc:
            raise node.error(key, f"knob {name!r}: {exc.message}") from None


def check_output_command(node: Node, key: str, name: str, command: str | None) -> None:
    """A metric command must not hand the benchmark's output to a nested interpreter: that
    text comes from the benchmark, and an interpreter would run it."""
    interpreter = nested_interpreter(command or "", "$out")
    if interpreter:
        raise node.error(
            key,
            f"metric {name!r}: $out would be read as code by {interpreter}; pass the output"
            ' as data instead (echo "$out" | grep ... | awk ...)',
        )
