"""The server's token: generated once with mode 0600 under hone's state directory, or configured.

Every state-changing request carries it as `Authorization: Bearer <token>`; reads need it too
unless read access is open. Tokens never travel in URLs."""

from __future__ import annotations

import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from fastapi import HTTPException, Request

from hone.errors import HoneError
from hone.paths import state_dir


def token_path() -> Path:
    return state_dir() / "serve" / "token"


def load_or_create_token(path: Path | None = None) -> tuple[str, bool]:
    """The stored token, or a new one written with mode 0600; True when it was just made."""
    path = path or token_path()
    if path.exists():
        mode = path.stat().st_mode & 0o077
        if mode:
            raise HoneError("token file is readable by others; chmod 600 it", file=path)
        token = path.read_text().strip()
        if len(token) < 16:
            raise HoneError("token in the token file is shorter than 16 characters", file=path)
        return token, False
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(token + "\n")
    return token, True


@dataclass(frozen=True)
class Access:
    """Who may do what: the token, and whether reads need it."""

    token: str
    open_reads: bool

    def check(self, request: Request, write: bool) -> None:
        if not write and self.open_reads:
            return
        header = request.headers.get("authorization", "")
        scheme, _, given = header.partition(" ")
        if not header:
            raise HTTPException(
                401, "this request needs the server's token", {"WWW-Authenticate": "Bearer"}
            )
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            given.strip().encode(), self.token.encode()
        ):
            raise HTTPException(403, "wrong token")
