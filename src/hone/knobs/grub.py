"""A kernel command-line parameter, staged for the next boot and never applied by rebooting.

hone writes its parameters to a drop-in of its own (`/etc/default/grub.d/hone.cfg`, read by
Debian's and Ubuntu's update-grub after /etc/default/grub), one parameter per line, so removing
one is exact. The value read is the staged one ("" when hone staged none); whether the running
kernel has it is `cmdline_value()`, which `hone profile check` shows."""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hone.errors import ActuationError
from hone.knobs.base import Actuator, register

GRUB_DEFAULTS = Path("/etc/default/grub")
_LINE = 'GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX {param}"  # hone\n'


def dropin_path() -> Path:
    """HONE_GRUB_DROPIN, else the drop-in beside the system's /etc/default/grub."""
    return Path(os.environ.get("HONE_GRUB_DROPIN") or GRUB_DEFAULTS.parent / "grub.d" / "hone.cfg")


def grub_present() -> bool:
    return "HONE_GRUB_DROPIN" in os.environ or GRUB_DEFAULTS.is_file()


def cmdline_value(key: str, cmdline: str | None = None) -> str | None:
    """The running kernel's value of a parameter (`""` for a bare flag, None when absent)."""
    text = cmdline if cmdline is not None else Path("/proc/cmdline").read_text()
    found = None
    for word in text.split():
        name, sep, value = word.partition("=")
        if name == key:
            found = value if sep else ""
    return found


@register
@dataclass
class GrubActuator(Actuator):
    key: str
    kind = "grub2"

    def setting(self) -> str:
        return f"grub:{self.key}"

    needs_restart = True  # a reboot, which hone never does

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_.\-]+", self.key):
            raise ActuationError("not a kernel parameter name", key=self.key)

    def _pattern(self) -> re.Pattern[str]:
        return re.compile(
            r'^GRUB_CMDLINE_LINUX="\$GRUB_CMDLINE_LINUX '
            + re.escape(self.key)
            + r'(?:=([^"]*))?"  # hone\n',
            re.M,
        )

    def _text(self) -> str:
        try:
            return dropin_path().read_text()
        except FileNotFoundError:
            return ""
        except OSError as exc:
            raise ActuationError(f"cannot read {dropin_path()}: {exc.strerror}",
                                 key=self.key) from None  # fmt: skip

    def created_path(self) -> str | None:
        """The drop-in is hone's own file, removed once it stages no parameter; the first
        folder missing on the way to it is created by the first write (Debian ships no
        /etc/default/grub.d), and journaled so that restore removes it again."""
        missing = None
        folder = Path(os.path.abspath(dropin_path())).parent
        while not os.path.lexists(folder):
            missing, folder = folder, folder.parent
        return str(missing) if missing else None

    def get(self) -> str:
        match = self._pattern().search(self._text())
        return (match.group(1) or "") if match else ""

    def set(self, value: str) -> None:
        if not grub_present():
            raise ActuationError("no /etc/default/grub: GRUB is not this machine's bootloader",
                                 key=self.key)  # fmt: skip
        value = str(value).strip()
        if any(c in value for c in '"$`\\\n '):
            raise ActuationError(f"{value!r} is not a plain kernel parameter value", key=self.key)
        text = self._pattern().sub("", self._text())
        if value:
            text += _LINE.format(param=f"{self.key}={value}")
        path = dropin_path()
        try:
            if not text:
                path.unlink(missing_ok=True)
                return
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
            with os.fdopen(fd, "w") as handle:
                handle.write(text)
            os.chmod(temp, 0o644)
            os.replace(temp, path)
        except OSError as exc:
            raise ActuationError(f"cannot stage in {path}: {exc.strerror}", key=self.key) from None

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "key": self.key}
