"""A small client of a remote `hone serve`, for `hone remote --server URL ...`: stdlib only.

The token comes from HONE_TOKEN or a token file, and goes in the Authorization header."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from hone.errors import HoneError


class RemoteClient:
    def __init__(self, server: str, token: str | None = None, timeout: float = 30.0) -> None:
        try:  # urllib refuses a port past 65535 or a broken [IPv6] host with a ValueError
            parsed = urllib.parse.urlsplit(server)
            _ = parsed.port
        except ValueError as exc:
            raise HoneError(f"--server {server!r}: {exc}") from None
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise HoneError(f"--server must be an http(s) URL, not {server!r}")
        if parsed.username or parsed.password or parsed.query:
            raise HoneError("--server must not carry credentials or a query; use HONE_TOKEN")
        self.base = server.rstrip("/")
        self.origin = _origin(server)
        self.token = token
        self.timeout = timeout
        self.opener = urllib.request.build_opener(_SameOriginRedirects(self.origin))

    def request(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with self.opener.open(request, timeout=self.timeout) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            try:
                detail = json.loads(exc.read()).get("detail", exc.reason)
            except (ValueError, AttributeError):
                detail = exc.reason
            raise HoneError(f"{self.base} answered {exc.code}: {detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise HoneError(f"cannot reach {self.base}: {reason}") from None

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def post(self, path: str, body: Any = None) -> Any:
        return self.request("POST", path, body if body is not None else {})


def _origin(url: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, f"{parts.hostname}:{parts.port or default}"


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only within the server's origin: urllib would otherwise carry the
    Authorization header, and with it the token, to whatever host the answer names."""

    def __init__(self, origin: tuple[str, str]) -> None:
        self.origin = origin

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        if _origin(newurl) != self.origin:
            raise HoneError(
                f"{req.full_url} redirects to another origin ({newurl}); not following it with"
                " the token"
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def study_path(name: str, tail: str = "") -> str:
    return f"/api/studies/{urllib.parse.quote(name, safe='')}{tail}"


def read_token(token_file: Path | None) -> str | None:
    """HONE_TOKEN, else the first line of the token file if one is named."""
    if os.environ.get("HONE_TOKEN"):
        return os.environ["HONE_TOKEN"].strip()
    if token_file is not None:
        try:
            lines = token_file.read_text().splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or "not text"
            raise HoneError(f"cannot read the token: {reason}", file=token_file) from None
        token = lines[0].strip() if lines else ""
        if not token:  # sent as no token at all, the server's 401 hid whose mistake it was
            raise HoneError("empty token file: its first line must be the token", file=token_file)
        return token
    return None
