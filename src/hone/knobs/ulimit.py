"""A resource limit in /etc/security/limits.conf, as A-Tune's `[ulimit]` names it:
`root.soft.nofile = 102400` is the line `root soft nofile 102400`.

The value is the last line that matches (as pam_limits reads it); no line reads as the empty
string, and setting the empty string removes the line, so a limit that hone added goes away on
restore. A file that did not exist (a drop-in under /etc/security/limits.d) is journaled as
absent, and restore removes it again once hone's lines are out of it. Limits apply to sessions
that start after the change. The file comes back byte for byte, as a config knob's does: its
line endings and final newline, its mode, owner and extended attributes, and a symlink stays a
link (config_file.replace_exact)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from hone.errors import ActuationError
from hone.knobs.base import Actuator, register
from hone.knobs.config_file import read_exact, refuse_hard_links, replace_exact

LIMITS_FILE = "/etc/security/limits.conf"
TYPES = ("soft", "hard", "-")
ITEMS = ("core", "data", "fsize", "memlock", "nofile", "rss", "stack", "cpu", "nproc", "as",
         "maxlogins", "maxsyslogins", "priority", "locks", "sigpending", "msgqueue", "nice",
         "rtprio", "chroot")  # fmt: skip


@register
@dataclass
class UlimitActuator(Actuator):
    domain: str
    type: str
    item: str
    file: str = LIMITS_FILE
    kind = "ulimit"

    def setting(self) -> str:
        return f"file:{os.path.realpath(self.file)}"

    needs_restart = True

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ActuationError(f"limit type must be soft, hard or -, not {self.type!r}",
                                 key=self.describe())  # fmt: skip
        if self.item not in ITEMS:
            raise ActuationError(f"unknown limit {self.item!r}", key=self.describe())

    def describe(self) -> str:
        return f"ulimit({self.domain}.{self.type}.{self.item})"

    def _pattern(self) -> re.Pattern[str]:
        return re.compile(
            rf"^[ \t]*{re.escape(self.domain)}[ \t]+{re.escape(self.type)}[ \t]+"
            rf"{re.escape(self.item)}[ \t]+(\S+)[ \t]*\r?$",
            re.M,
        )

    def _text(self) -> str:
        try:
            return read_exact(self.file)
        except FileNotFoundError:
            return ""
        except OSError as exc:
            raise ActuationError(f"cannot read {self.file}: {exc.strerror}",
                                 key=self.describe()) from None  # fmt: skip

    def check_writable(self) -> None:
        """A limits file with other hard links would be split by the rename that writes it."""
        refuse_hard_links(self.file, self.describe())

    def created_path(self) -> str | None:
        target = os.path.realpath(self.file)
        return None if os.path.lexists(target) else target

    def get(self) -> str:
        matches = list(self._pattern().finditer(self._text()))
        return matches[-1].group(1) if matches else ""

    def set(self, value: str) -> None:
        value = str(value).strip()
        if value and not (value in ("unlimited", "infinity") or value.lstrip("-").isdigit()):
            raise ActuationError(f"{value!r} is not a number or unlimited", key=self.describe())
        text = self._text()
        lines = list(self._pattern().finditer(text))
        newline = "\r\n" if "\r\n" in text else "\n"
        if not value and not lines:
            return  # no line to take out: a file that is not there is not created empty
        if not value:
            text = _without(text, lines)
        elif lines:
            last = lines[-1]
            text = text[: last.start(1)] + value + text[last.end(1) :]
        elif text and not text.endswith("\n"):  # no final line break: nor has the new line
            text += f"{newline}{self.domain}\t{self.type}\t{self.item}\t{value}"
        else:
            text += f"{self.domain}\t{self.type}\t{self.item}\t{value}{newline}"
        try:
            replace_exact(self.file, text)
        except OSError as exc:
            raise ActuationError(f"cannot write {self.file}: {exc.strerror}",
                                 key=self.describe()) from None  # fmt: skip

    def spec(self) -> dict[str, Any]:
        spec = {"kind": self.kind, "domain": self.domain, "type": self.type, "item": self.item}
        if self.file != LIMITS_FILE:
            spec["file"] = self.file
        return spec


def _without(text: str, lines: list[re.Match[str]]) -> str:
    """The text without these lines: each with its line break, or, for a last line that has
    none, with the break before it (the one added with it)."""
    for line in reversed(lines):
        start, end = line.start(), line.end()
        if text.startswith("\n", end):
            end += 1
        elif start > 0:
            start -= 2 if text[:start].endswith("\r\n") else 1
        text = text[:start] + text[end:]
    return text
