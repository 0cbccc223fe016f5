"""An environment variable of a process hone starts (GOGC, MALLOC_ARENA_MAX, JAVA_OPTS, ...)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hone.errors import ActuationError
from hone.knobs.base import Actuator, register
from hone.workload.launch import LaunchSpec


@register
@dataclass
class EnvActuator(Actuator):
    variable: str
    default: str | None = None
    launch: LaunchSpec | None = field(default=None, repr=False, compare=False)
    kind = "env"
    needs_restart = True
    persistent = False

    def __post_init__(self) -> None:
        if self.launch is None:
            raise ActuationError("an env knob needs a process that hone starts", key=self.variable)
        if not isinstance(self.variable, str) or not self.variable or "=" in self.variable:
            raise ActuationError(f"{self.variable!r} is not a variable name", key="env")
        if "\x00" in self.variable:
            raise ActuationError(f"{self.variable!r} holds a NUL byte", key="env")

    def check_value(self, value: str) -> None:
        """A NUL cannot be passed in an environment."""
        if "\x00" in value:
            raise ActuationError(f"value {value!r} holds a NUL byte", key=self.variable)

    @property
    def readable(self) -> bool:
        assert self.launch is not None
        return self.launch.get_env(self.variable) is not None or self.default is not None

    def get(self) -> str:
        assert self.launch is not None
        value = self.launch.get_env(self.variable)
        if value is not None:
            return value
        if self.default is None:
            raise ActuationError("not set and no default", key=self.variable)
        return str(self.default)

    def set(self, value: str) -> None:
        assert self.launch is not None
        self.launch.set_env(self.variable, str(value))

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "variable": self.variable}
