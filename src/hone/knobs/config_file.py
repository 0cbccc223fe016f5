"""A key in a configuration file: INI (with sections), `key value` (redis.conf), `key=value`
(postgresql.conf, sysconfig) or a user regex whose one group is the value.

The file is rewritten atomically (temporary file, rename) with its mode and owner kept,
and every other line, comment and blank line stays as it was."""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hone.errors import ActuationError
from hone.knobs.base import Actuator, register
from hone.shell import expand

FORMATS = ("ini", "space", "equals", "regex")


@register
@dataclass
class ConfigFileActuator(Actuator):
    file: str
    key: str = ""
    format: str = "equals"
    section: str | None = None
    #: For format regex: a pattern whose first group is the value, e.g. `^LEVEL = (\d+)`.
    pattern: str | None = None
    #: Most programs read their config at start; false for one read on every benchmark run.
    restart: bool = True
    kind = "config"

    def setting(self) -> str:
        return f"file:{self.path.resolve()}"

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ActuationError(f"format must be one of {', '.join(FORMATS)}", key=self.file)
        if self.format == "regex":
            if not self.pattern:
                raise ActuationError("format regex needs a pattern", key=self.file)
            try:
                if re.compile(self.pattern, re.MULTILINE).groups < 1:
                    raise ActuationError("the pattern needs one (group)", key=self.file)
            except re.error as exc:
                raise ActuationError(f"bad pattern: {exc}", key=self.file) from None
        elif not self.key:
            raise ActuationError("a config knob needs a key", key=self.file)

    @property
    def needs_restart(self) -> bool:  # type: ignore[override]
        return self.restart

    # -- reading and writing the file ------------------------------------------------------

    @property
    def path(self) -> Path:
        """The file, with hone's $HONE_* variables (e.g. the work directory) expanded."""
        return Path(expand(self.file))

    def _read(self) -> str:
        try:
            return self.path.read_text()
        except OSError as exc:
            raise ActuationError(f"cannot read {self.path}: {exc.strerror}", key=self.key) from None

    def _write(self, text: str) -> None:
        """Replace the file's text atomically. A symlink is written through: the rename lands
        on its target, so the link stays a link; mode, owner and extended attributes (ACLs,
        SELinux labels) are carried over to the new inode."""
        path = self.path.resolve()
        stat = path.stat()
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            # Atomic by rename; no fsync: the journal, not this file, is the durable record.
            with os.fdopen(fd, "w") as handle:
                handle.write(text)
            os.chown(temp, stat.st_uid, stat.st_gid)
            os.chmod(temp, stat.st_mode & 0o7777)
            _copy_xattrs(path, temp)
            os.replace(temp, path)
        except OSError as exc:
            Path(temp).unlink(missing_ok=True)
            raise ActuationError(
                f"cannot write {self.file}: {exc.strerror}", key=self.key
            ) from None

    def check_value(self, value: str) -> None:
        """Values that the file's syntax would not give back as written: a line break makes a
        new line, `#` / `;` start a comment, an outer quote is taken for quoting."""
        bad = ["\n", "\r", "\x00"] + ([] if self.format == "regex" else ["#", ";"])
        found = [repr(c) for c in bad if c in value]
        if not value.strip() and self.format != "regex":
            found.append("no text (the key's spacing would swallow it)")
        if value[:1] in ("'", '"') or value[-1:] in ("'", '"'):
            found.append("a quote at its edge")
        if found:
            what = found[0]
            raise ActuationError(
                f"value {value!r} holds {what}: {self.file} would not read it back as written",
                key=self.key or self.pattern,
            )

    # -- locating the value ----------------------------------------------------------------

    def _line_pattern(self) -> re.Pattern[str]:
        key = re.escape(self.key)
        if self.format == "regex":
            return re.compile(self.pattern or "", re.MULTILINE)
        if self.format == "space":
            # `key value`, or nginx's `key value;`: the `;` and comments stay where they are.
            return re.compile(
                rf"^(?P<head>[ \t]*{key}[ \t]+)(?P<value>[^\n#;]*?)[ \t]*([;#].*)?$", re.M
            )
        return re.compile(
            rf"^(?P<head>[ \t]*{key}[ \t]*[=:][ \t]*)(?P<value>[^\n#;]*?)[ \t]*([#;].*)?$", re.M
        )

    def _region(self, text: str) -> tuple[int, int]:
        """The part of the file holding the key: the whole file, or the INI section."""
        if self.format != "ini" or not self.section:
            return 0, len(text)
        header = re.search(rf"^[ \t]*\[{re.escape(self.section)}\][ \t]*$", text, re.M)
        if not header:
            raise ActuationError(f"no section [{self.section}] in {self.file}", key=self.key)
        following = re.compile(r"^[ \t]*\[", re.M).search(text, header.end())
        return header.end(), following.start() if following else len(text)

    def _find(self, text: str) -> re.Match[str] | None:
        start, end = self._region(text)
        return self._line_pattern().search(text, start, end)

    def get(self) -> str:
        return self.value_in(self._read())

    def value_in(self, text: str) -> str:
        """The key's value in this text of the file (a remote host's file is read elsewhere)."""
        match = self._find(text)
        if match is None:
            raise ActuationError(f"key not found in {self.file}", key=self.key or self.pattern)
        value = match.group("value") if self.format != "regex" else match.group(1)
        return _unquote(value.strip())

    def set(self, value: str) -> None:
        self._write(self.edited(self._read(), value))

    def edited(self, text: str, value: str) -> str:
        """The file's text with the key set to `value`, every other byte as it was."""
        match = self._find(text)
        if match is None:
            if self.format == "regex":
                raise ActuationError(f"pattern not found in {self.file}", key=self.pattern)
            _, end = self._region(text)
            separator = " " if self.format == "space" else " = "
            line = f"{self.key}{separator}{value}\n"
            prefix = (
                text[:end] if text[:end].endswith("\n") or not text[:end] else text[:end] + "\n"
            )
            return prefix + line + text[end:]
        group = "value" if self.format != "regex" else 1
        old = match.group(group)
        quote = old.strip()[:1] if old.strip()[:1] in "\"'" and len(old.strip()) > 1 else ""
        start, end = match.span(group)
        return text[:start] + f"{quote}{value}{quote}" + text[end:]

    def spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"kind": self.kind, "file": str(self.path), "format": self.format}
        for name in ("key", "section", "pattern"):
            if getattr(self, name):
                spec[name] = getattr(self, name)
        if not self.restart:
            spec["restart"] = False
        return spec

    def describe(self) -> str:
        where = f"[{self.section}] " if self.section else ""
        return f"config({Path(self.file).name}: {where}{self.key or self.pattern})"


def _copy_xattrs(source: Path, target: str) -> None:
    """Extended attributes where the file system has them (ACLs live there too)."""
    try:
        names = os.listxattr(source)
    except OSError:
        return
    for name in names:
        try:
            os.setxattr(target, name, os.getxattr(source, name))
        except OSError:
            continue  # a security label the kernel does not let us copy: keep the default


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text
