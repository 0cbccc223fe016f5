"""A systemd service's state, as A-Tune's `[systemctl]` section names it: `start` or `stop`.

Without systemd as init (containers, some VMs) no service can be running under it, so `get`
says `stop` and only a `start` is refused, with the reason."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

from hone.errors import ActuationError
from hone.knobs.base import Actuator, register

STATES = ("start", "stop")


def systemd_running() -> bool:
    """True when systemd is PID 1 (it creates this folder at boot)."""
    from pathlib import Path

    return Path("/run/systemd/system").is_dir() and shutil.which("systemctl") is not None


@register
@dataclass
class SystemctlActuator(Actuator):
    unit: str
    kind = "systemctl"

    def setting(self) -> str:
        return f"systemctl:{self.unit}"

    def _systemctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["systemctl", *args, "--", self.unit],
            capture_output=True,
            text=True,
            timeout=120,
        )

    def get(self) -> str:
        if not systemd_running():
            return "stop"
        state = self._systemctl("is-active").stdout.strip()
        return "start" if state in ("active", "activating", "reloading") else "stop"

    def check_value(self, value: str) -> None:
        """A state that is not start or stop."""
        if self.normalise(value) not in STATES:
            raise ActuationError(f"{value!r} is not start or stop", key=self.unit)

    def check_startable(self, value: str) -> None:
        """A start where no systemd runs: sure to fail on this machine (a profile checks it
        before it changes anything; a project naming start stays valid for other machines)."""
        if self.normalise(value) == "start" and not systemd_running():
            raise ActuationError("cannot start: systemd is not running here", key=self.unit)

    def set(self, value: str) -> None:
        value = self.normalise(value)
        self.check_value(value)
        self.check_startable(value)
        if not systemd_running():  # a stop: nothing runs under a systemd that is not there
            return
        result = self._systemctl(value)
        if result.returncode != 0:
            reason = " ".join(result.stderr.split())[:300] or f"exit {result.returncode}"
            raise ActuationError(f"systemctl {value} failed: {reason}", key=self.unit)

    def normalise(self, text: str) -> str:
        return str(text).strip().lower()

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "unit": self.unit}
