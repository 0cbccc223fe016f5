"""Files under /sys: transparent huge pages, block-queue settings, CPU governors, ...

Many of them show a list of choices with the active one in brackets (`always [madvise] never`);
`get` returns the active word, and that is what is compared after a set."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hone.errors import ActuationError
from hone.knobs.base import Actuator, register

SYS = Path("/sys")
_SELECTED = re.compile(r"\[([^\]]+)\]")


@register
@dataclass
class SysfsActuator(Actuator):
    path: str
    kind = "sysfs"

    def __post_init__(self) -> None:
        """Refused when the project is loaded, not at the first set: a path outside /sys."""
        if not isinstance(self.path, str) or not self.path:
            raise ActuationError("a sysfs knob needs a path under /sys", key="sysfs")
        if not os.path.normpath(self.path).startswith("/sys/"):
            raise ActuationError(f"{self.path!r} is not under /sys", key=self.path)

    def _file(self) -> Path:
        path = Path(self.path).resolve()
        if SYS not in path.parents:
            raise ActuationError(f"{self.path!r} is not under /sys", key=self.path)
        return path

    def get(self) -> str:
        try:
            text = self._file().read_text().strip()
        except OSError as exc:
            raise ActuationError(f"cannot read: {exc.strerror}", key=self.path) from None
        selected = _SELECTED.search(text)
        return selected.group(1) if selected else text

    def set(self, value: str) -> None:
        try:
            with open(self._file(), "w") as handle:
                handle.write(str(value))
        except OSError as exc:
            raise ActuationError(f"cannot set {value!r}: {exc.strerror}", key=self.path) from None

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": self.path}
