"""The command line and environment of a process that hone starts itself.

Flag and environment-variable knobs edit a LaunchSpec; the workload manager starts the process
from it, so such knobs take effect at the next (re)start and vanish with the process."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Flag:
    """One command-line option: `-t 4` (separate), `--threads=4` (equals), `--verbose` (switch:
    present when the value is true, absent otherwise)."""

    flag: str
    value: str
    style: str = "separate"

    def render(self) -> list[str]:
        if self.style == "equals":
            return [f"{self.flag}={self.value}"]
        if self.style == "switch":
            return [self.flag] if self.value.lower() in ("1", "true", "yes", "on") else []
        return [self.flag, self.value]


@dataclass
class LaunchSpec:
    argv: list[str]
    flags: dict[str, Flag] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    #: How to stop it: TERM (then KILL after a grace period), or KILL at once for servers
    #: that take seconds to shut down and keep nothing worth saving (memcached).
    stop_signal: str = "TERM"

    #: The values env knobs set, beside the project's own `env`.
    knob_env: dict[str, str] = field(default_factory=dict)

    def get_env(self, variable: str) -> str | None:
        return self.knob_env.get(variable, self.env.get(variable))

    def set_env(self, variable: str, value: str) -> None:
        """An env knob's value, which reaches the process as it is."""
        self.knob_env[variable] = value

    def command(self, expand: Callable[[str], str] = str) -> list[str]:
        """argv, its words expanded (the project's `$HONE_PORT`, ...), followed by every flag in
        the order it was first set: a knob's value passes as given, `$HONE_PORT` in it too."""
        rendered = [part for flag in self.flags.values() for part in flag.render()]
        return [*(expand(word) for word in self.argv), *rendered]

    def environment(self, expand: Callable[[str], str] = str) -> dict[str, str]:
        """The variables the process gets beside the caller's: the project's expanded, a knob's
        value as given (the project's own value put back by a knob is the project's again)."""
        own = {k: expand(v) for k, v in self.env.items()}
        return own | {k: v for k, v in self.knob_env.items() if v != self.env.get(k)}
