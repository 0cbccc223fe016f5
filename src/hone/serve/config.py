"""How one `hone serve` is set up: where it listens, who may read and write, what it may run."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class ServeConfig:
    token: str
    host: str = "127.0.0.1"
    port: int = 8765
    #: None: reads are open on a loopback address and need the token anywhere else.
    open_reads: bool | None = None
    #: Projects that POST /api/studies may start, by name (never a path from a request).
    projects: dict[str, Path] = field(default_factory=dict)
    storage: str | None = None
    #: Origins allowed by CORS; empty means same-origin only. A wildcard is refused.
    origins: list[str] = field(default_factory=list)

    @property
    def loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    @property
    def reads_open(self) -> bool:
        return self.loopback if self.open_reads is None else self.open_reads

    def allowed_hosts(self) -> list[str]:
        """Host headers accepted: on loopback only loopback names, so that a page on another
        site cannot reach this server through DNS rebinding."""
        if not self.loopback:
            return ["*"]
        return ["127.0.0.1", "localhost", "[::1]", "::1", self.host]
