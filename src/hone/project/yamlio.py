"""YAML loading that remembers line numbers, so every error can name the file, line and key."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from hone.errors import HoneError


class Node(dict):
    """A mapping that knows the file and the line of itself and of each of its keys."""

    file: str = ""
    line: int | None = None
    key_lines: dict[str, int]

    def line_of(self, key: str) -> int | None:
        return self.key_lines.get(key, self.line)

    def error(self, key: str | None, message: str) -> HoneError:
        line = self.line_of(key) if key is not None else self.line
        return HoneError(message, file=self.file, line=line, key=key)


class NodeList(list):
    file: str = ""
    line: int | None = None
    item_lines: list[int]

    def error(self, index: int, message: str) -> HoneError:
        return HoneError(message, file=self.file, line=self.item_lines[index])


class CoreSafeLoader(yaml.SafeLoader):
    """YAML 1.2's core schema for plain values. YAML 1.1 read on, off, yes and no as booleans,
    so a value list `[on, off]` became True/False and hone would have written `sendfile True`
    into nginx.conf (settings that are flags accept those words anyway: `common.boolean`,
    `Boolean.parse`); it read `1e3` as text (a float needed a dot), `010` as eight and `1:30`
    as ninety, and `2024-01-01` as a date. Here only true and false are booleans, `1e3` is a
    thousand, `010` is ten, `0o10` eight, `0x10` sixteen, `1_000` a thousand still, and `1:30`
    and `2024-01-01` are text."""


_OWN = {f"tag:yaml.org,2002:{tag}" for tag in ("bool", "int", "float", "timestamp")}
CoreSafeLoader.yaml_implicit_resolvers = {
    first: [(tag, rule) for tag, rule in resolvers if tag not in _OWN]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
for _tag, _rule, _first in (
    ("bool", r"true|True|TRUE|false|False|FALSE", "tTfF"),
    ("int", r"[-+]?[0-9][0-9_]*|0o[0-7]+|0x[0-9a-fA-F]+", "-+0123456789"),
    ("float", r"[-+]?(?:\.[0-9]+|[0-9][0-9_]*(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?", "-+.0123456789"),
    ("float", r"[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)", "-+."),
):
    CoreSafeLoader.add_implicit_resolver(
        f"tag:yaml.org,2002:{_tag}", re.compile(f"^(?:{_rule})$"), list(_first)
    )


def _core_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    base = {"0o": 8, "0x": 16}.get(text[:2])
    return int(text[2:], base) if base else int(text)


def _yaml_1_1(text: str) -> Any:
    """What PyYAML's YAML 1.1 reading makes of a plain value: `010` is eight, `08` text."""
    return yaml.safe_load(text)


def _core_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float:
    text = str(loader.construct_scalar(node)).lower()
    return float(text.replace(".inf", "inf").replace(".nan", "nan"))


CoreSafeLoader.add_constructor("tag:yaml.org,2002:int", _core_int)
CoreSafeLoader.add_constructor("tag:yaml.org,2002:float", _core_float)


class CoreSafeDumper(yaml.SafeDumper):
    """Writes text that CoreSafeLoader, and YAML 1.1 readers such as A-Tune's, read back as the
    same text: a string either would take for a number, a boolean or a date is quoted (`'1e3'`,
    `'on'`, `'010'`)."""


CoreSafeDumper.yaml_implicit_resolvers = {
    first: [
        *yaml.SafeDumper.yaml_implicit_resolvers.get(first, []),
        *CoreSafeLoader.yaml_implicit_resolvers.get(first, []),
    ]
    for first in {*yaml.SafeDumper.yaml_implicit_resolvers, *CoreSafeLoader.yaml_implicit_resolvers}
}


def _loader_for(file: str) -> type[yaml.SafeLoader]:
    class Loader(CoreSafeLoader):
        pass

    def mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> Node:
        result = Node()
        result.file, result.line, result.key_lines = file, node.start_mark.line + 1, {}
        loader.flatten_mapping(node)
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, str | int | float | bool):
                raise HoneError(
                    "a key must be a plain value", file=file, line=key_node.start_mark.line + 1
                )
            # Keys keep their text: YAML 1.1 would read `on:`/`off:`/`yes:` as booleans.
            key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else str(key)
            if key in result:
                raise HoneError(
                    "duplicate key", file=file, line=key_node.start_mark.line + 1, key=key
                )
            result[key] = loader.construct_object(value_node, deep=True)
            result.key_lines[key] = key_node.start_mark.line + 1
        return result

    def sequence(loader: yaml.SafeLoader, node: yaml.SequenceNode) -> NodeList:
        result = NodeList(loader.construct_object(child, deep=True) for child in node.value)
        result.file, result.line = file, node.start_mark.line + 1
        result.item_lines = [child.start_mark.line + 1 for child in node.value]
        return result

    def compose_node(self: yaml.SafeLoader, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise HoneError(
                "YAML aliases (*name) are not accepted in hone's files",
                file=file,
                line=event.start_mark.line + 1,
            )
        return CoreSafeLoader.compose_node(self, parent, index)

    def integer(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
        value = _core_int(loader, node)
        if re.fullmatch(r"[-+]?0[0-9_]*[0-9]", node.value) and _yaml_1_1(node.value) != value:
            raise HoneError(
                f"{node.value}: a leading zero reads as {_yaml_1_1(node.value)!r} in YAML 1.1"
                f" (A-Tune) and {value} in YAML 1.2; quote it for the text"
                f" ('{node.value}') or write the number without it",
                file=file,
                line=node.start_mark.line + 1,
            )
        return value

    Loader.compose_node = compose_node  # type: ignore[method-assign]
    Loader.add_constructor("tag:yaml.org,2002:int", integer)
    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, sequence)
    return Loader


def load_yaml(path: Path) -> Any:
    """Parse a YAML file; a syntax error becomes one HoneError line with file and line."""
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte-order mark is harmless
    except OSError as exc:
        raise HoneError(f"cannot read: {exc.strerror}", file=path) from None
    except UnicodeDecodeError as exc:
        raise HoneError(f"not UTF-8 text (byte {exc.start})", file=path) from None
    if "\x00" in text:
        raise HoneError("not a text file (it holds NUL bytes)", file=path)
    try:
        return yaml.load(text, Loader=_loader_for(str(path)))
    except RecursionError:
        raise HoneError("invalid YAML: nested too deeply", file=path) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        reason = " ".join(str(exc.problem or exc.context or "invalid YAML").split())
        raise HoneError(f"invalid YAML: {reason}", file=path, line=line) from None
    except yaml.YAMLError as exc:
        raise HoneError(f"invalid YAML: {' '.join(str(exc).split())}", file=path) from None


def dump_with_header(header: list[str], data: dict[str, Any]) -> str:
    """A YAML file hone writes: its comment lines, then the data. A comment may quote text that
    holds line breaks (a diagnosed process's command line: a script given with `-c`); each is
    kept on its line, or the rest would be read as YAML."""
    lines = [re.sub(r"\s*[\r\n]+\s*", " ", line) for line in header]
    body = yaml.dump(
        data, Dumper=CoreSafeDumper, sort_keys=False, default_flow_style=None, width=100
    )
    return "\n".join(lines) + "\n" + body
