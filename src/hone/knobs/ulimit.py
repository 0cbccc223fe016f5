"""A resource limit in /etc/security/limits.conf, as A-Tune's `[ulimit]` names it:
`root.soft.nofile = 102400` is the line `root soft nofile 102400`.

The value is the last line that matches (as pam_limits reads it); no line reads as the empty
string, and setting the empty string removes the line, so a limit that hone added goes away on
restore. Limits apply to sessions that start after the change."""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hone.errors import ActuationError
from hone.knobs.base import Actuator, register

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
            rf"{re.escape(self.item)}[ \t]+(\S+)[ \t]*$",
            re.M,
        )

    def _text(self) -> str:
        try:
            return Path(self.file).read_text()
        except FileNotFoundError:
            return ""
        except OSError as exc:
            raise ActuationError(f"cannot read {self.file}: {exc.strerror}",
                                 key=self.describe()) from None  # fmt: skip

    def get(self) -> str:
        matches = list(self._pattern().finditer(self._text()))
        return matches[-1].group(1) if matches else ""

    def set(self, value: str) -> None:
        value = str(value).strip()
        if value and not (value in ("unlimited", "infinity") or value.lstrip("-").isdigit()):
            raise ActuationError(f"{value!r} is not a number or unlimited", key=self.describe())
        text = self._text()
        lines = list(self._pattern().finditer(text))
        if not value:
            text = re.sub(self._pattern().pattern + r"\n?", "", text, flags=re.M)
        elif lines:
            last = lines[-1]
            text = text[: last.start(1)] + value + text[last.end(1) :]
        else:
            text += "" if text.endswith("\n") or not text else "\n"
            text += f"{self.domain}\t{self.type}\t{self.item}\t{value}\n"
        self._write(text)

    def _write(self, text: str) -> None:
        path = Path(self.file)
        mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(text)
            os.chmod(temp, mode)
            os.replace(temp, path)
        except OSError as exc:
            Path(temp).unlink(missing_ok=True)
            raise ActuationError(f"cannot write {self.file}: {exc.strerror}",
                                 key=self.describe()) from None  # fmt: skip

    def spec(self) -> dict[str, Any]:
        spec = {"kind": self.kind, "domain": self.domain, "type": self.type, "item": self.item}
        if self.file != LIMITS_FILE:
            spec["file"] = self.file
        return spec
