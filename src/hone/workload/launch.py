"""The command line and environment of a process that hone starts itself.

Flag and environment-variable knobs edit a LaunchSpec; the workload manager starts the process
from it, so such knobs take effect at the next (re)start and vanish with the process."""

from __future__ import annotations

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

    def command(self) -> list[str]:
        """argv followed by every flag in the order it was first set."""
        rendered = [part for flag in self.flags.values() for part in flag.render()]
        return [*self.argv, *rendered]
