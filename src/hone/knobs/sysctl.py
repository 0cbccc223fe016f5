"""Kernel parameters under /proc/sys, named as sysctl names them (`vm.swappiness`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hone.errors import ActuationError
from hone.knobs.base import Actuator, register

PROC_SYS = Path("/proc/sys")


@register
@dataclass
class SysctlActuator(Actuator):
    key: str
    kind = "sysctl"

    def setting(self) -> str:
        return "sysctl:" + self.key.replace("/", ".")

    def __post_init__(self) -> None:
        """Refused when the project is loaded, not at the first read: a key that leads out of
        /proc/sys (`../../etc/passwd`), or none at all."""
        if not isinstance(self.key, str) or not self.key.strip(". /"):
            raise ActuationError("a sysctl knob needs a key such as vm.swappiness", key="sysctl")
        if "\x00" in self.key or any(c.isspace() for c in self.key):
            raise ActuationError(f"{self.key!r} is not a sysctl name", key=self.key)
        if not os.path.normpath(PROC_SYS / self._relative()).startswith(f"{PROC_SYS}/"):
            raise ActuationError(f"{self.key!r} is not under /proc/sys", key=self.key)

    def _relative(self) -> str:
        return self.key.replace(".", "/") if "/" not in self.key else self.key

    @property
    def path(self) -> Path:
        path = (PROC_SYS / self._relative()).resolve()
        if PROC_SYS not in path.parents:
            raise ActuationError(f"{self.key!r} is not under /proc/sys", key=self.key)
        return path

    def get(self) -> str:
        try:
            return self.path.read_text().strip()
        except OSError as exc:
            raise ActuationError(f"cannot read: {exc.strerror}", key=self.key) from None

    def check_writable(self) -> None:
        """A read-only setting (kernel.ostype) or a /proc/sys mounted read-only (a container)."""
        path = self.path
        if path.exists() and not os.access(path, os.W_OK):
            raise ActuationError(f"{path} is read-only here", key=self.key)

    def set(self, value: str) -> None:
        try:
            with open(self.path, "w") as handle:
                handle.write(str(value))
        except OSError as exc:
            raise ActuationError(f"cannot set {value!r}: {exc.strerror}", key=self.key) from None

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "key": self.key}
