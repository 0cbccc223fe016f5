"""A command-line option of a process hone starts: `-t 4`, `--threads=4`, or a bare switch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hone.errors import ActuationError
from hone.knobs.base import Actuator, register
from hone.workload.launch import Flag, LaunchSpec

STYLES = ("separate", "equals", "switch")
SWITCH_WORDS = ("1", "true", "yes", "on", "0", "false", "no", "off")


@register
@dataclass
class FlagActuator(Actuator):
    flag: str
    style: str = "separate"
    default: str | None = None
    launch: LaunchSpec | None = field(default=None, repr=False, compare=False)
    kind = "flag"
    needs_restart = True
    persistent = False

    def __post_init__(self) -> None:
        if self.style not in STYLES:
            raise ActuationError(f"style must be one of {', '.join(STYLES)}", key=self.flag)
        if self.launch is None:
            raise ActuationError("a flag knob needs a process that hone starts", key=self.flag)
        if not isinstance(self.flag, str) or not self.flag or any(c.isspace() for c in self.flag):
            raise ActuationError(f"{self.flag!r} is not one command-line option", key="flag")
        if any(a == self.flag or a.startswith(f"{self.flag}=") for a in self.launch.argv):
            raise ActuationError(
                f"{self.flag} is already in the workload's command: hone would add a second "
                "one, and programs differ in which they read; remove it there (the knob's "
                "default: gives its value)",
                key=self.flag,
            )

    def check_value(self, value: str) -> None:
        """A NUL cannot be passed to a process; a switch is on or off, so any other word
        would silently leave it off."""
        if "\x00" in value:
            raise ActuationError(f"value {value!r} holds a NUL byte", key=self.flag)
        if self.style == "switch" and value.lower() not in SWITCH_WORDS:
            raise ActuationError(
                f"value {value!r} of a switch must be one of {', '.join(SWITCH_WORDS)}",
                key=self.flag,
            )

    @property
    def readable(self) -> bool:
        return self.flag in self._launch().flags or self.default is not None

    def _launch(self) -> LaunchSpec:
        assert self.launch is not None
        return self.launch

    def get(self) -> str:
        current = self._launch().flags.get(self.flag)
        if current is not None:
            return current.value
        if self.default is None:
            raise ActuationError("not set and no default", key=self.flag)
        return str(self.default)

    def set(self, value: str) -> None:
        self._launch().flags[self.flag] = Flag(self.flag, str(value), self.style)

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "flag": self.flag, "style": self.style}
