"""The server's front door, before any route: a request body is bounded and must be JSON, and a
request that carries one (a write) must show the token before a byte of it is read. FastAPI
reads a body before it runs a route's dependencies, so a large anonymous POST would otherwise be
read into memory in full only to be refused."""

from __future__ import annotations

from typing import Any

from fastapi import HTTPException
from fastapi.responses import JSONResponse
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hone.serve.deps import READS

MAX_BODY = 1 << 20  # the API's bodies are a few hundred bytes of JSON


class Gate:
    def __init__(self, app: ASGIApp, max_body: int = MAX_BODY) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in READS:
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        try:
            request.app.state.access.check(request, write=True)
            length = request.headers.get("content-length")
            if length is not None and (not length.isdigit() or int(length) > self.max_body):
                raise HTTPException(413, f"request body over {self.max_body} bytes")
            if _has_body(request) and not _json_type(request.headers.get("content-type")):
                raise HTTPException(415, "Content-Type: the body must be application/json")
        except HTTPException as exc:
            await _refuse(exc, scope, receive, send)
            return
        await self.app(scope, self._bounded(receive), send)

    def _bounded(self, receive: Receive) -> Receive:
        """A chunked body without a length is counted as it arrives and cut at the limit."""
        seen = 0

        async def bounded() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_body:
                raise HTTPException(413, f"request body over {self.max_body} bytes")
            return message

        return bounded


def _has_body(request: Request) -> bool:
    length = request.headers.get("content-length")
    return "transfer-encoding" in request.headers or (length is not None and length != "0")


def _json_type(content_type: str | None) -> bool:
    """What FastAPI reads as JSON: application/json or application/*+json. A body of any other
    type, or of none (FastAPI's strict content type), reaches the route as bytes, and its 422
    blames the body's shape, not its type."""
    media = (content_type or "").partition(";")[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


async def _refuse(exc: HTTPException, scope: Scope, receive: Receive, send: Send) -> None:
    headers: Any = exc.headers or {}
    response = JSONResponse({"detail": exc.detail}, exc.status_code, headers=headers)
    await response(scope, receive, send)
