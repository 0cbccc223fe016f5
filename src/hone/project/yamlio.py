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
    """YAML 1.2's booleans: only true and false. YAML 1.1 also read on, off, yes and no as
    booleans, so a value list `[on, off]` became True/False and hone would have written
    `sendfile True` into nginx.conf; settings that are flags accept those words anyway
    (`common.boolean`, `Boolean.parse`)."""


CoreSafeLoader.yaml_implicit_resolvers = {
    first: [(tag, rule) for tag, rule in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
CoreSafeLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


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

    Loader.compose_node = compose_node  # type: ignore[method-assign]
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
    body = yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)
    return "\n".join(lines) + "\n" + body
