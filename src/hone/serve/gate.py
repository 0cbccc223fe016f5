"""The server's front door, before any route: a request body is bounded in size and in nesting and
must be JSON, and a request that carries one (a write) must show the token before a byte of it is
read. FastAPI reads a body before it runs a route's dependencies, so a large anonymous POST would
otherwise be read into memory in full only to be refused. Python's JSON parser recurses: unbounded,
a body of thousands of nested arrays gets FastAPI's vague "error parsing the body", and a route
that parses its own body (`no_body`) fails with a 500 and a traceback. So do bytes that are not
UTF-8 and an integer past Python's int-conversion limit: both are refused here, for every route,
with the offset or the field that holds them."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import numpy as np
from fastapi import HTTPException
from fastapi.responses import JSONResponse
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hone.serve.deps import READS

MAX_BODY = 1 << 20  # the API's bodies are a few hundred bytes of JSON
MAX_DEPTH = 32  # they are flat objects: two levels

#: opening brackets to +1 and closing ones to -1 (as int8); every other byte deleted
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


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
            body = await self._read(receive)
            if body is None:  # the client left before its body was whole
                return
            if _depth(body) > MAX_DEPTH:
                raise HTTPException(400, f"request body: JSON nested over {MAX_DEPTH} levels deep")
            unreadable = _unreadable(body)
            if unreadable:
                raise HTTPException(400, unreadable)
        except HTTPException as exc:
            await _refuse(exc, scope, receive, send)
            return
        await self.app(scope, _replay(body, receive), send)

    async def _read(self, receive: Receive) -> bytes | None:
        """The whole body, counted as it arrives (a chunked one has no length) and cut at the
        limit; None when the client disconnects first."""
        parts: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            parts.append(message.get("body", b""))
            seen += len(parts[-1])
            if seen > self.max_body:
                raise HTTPException(413, f"request body over {self.max_body} bytes")
            if not message.get("more_body", False):
                return b"".join(parts)


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body already read, as one message; then the client's own messages (a disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


def _depth(body: bytes) -> int:
    """How deep the body's arrays and objects nest, counted without parsing (a malformed body is
    left to the JSON parser's own error): a running sum of +1 per opening and -1 per closing
    bracket outside strings. Linear and in C (bytes methods, numpy) since it runs on the event
    loop: a regular expression for strings backtracks quadratically over unclosed ones."""
    # once the escaped backslashes and quotes are gone, every quote opens or closes a string,
    # so the text outside strings is every other piece between quotes
    plain = body.replace(b"\\\\", b"").replace(b'\\"', b"")
    steps = b"".join(plain.split(b'"')[::2]).translate(_STEPS, _NOT_BRACKET)
    if not steps:
        return 0
    return int(np.frombuffer(steps, dtype=np.int8).cumsum(dtype=np.int64).max())


class _LongInt:
    """An integer literal past the limit, kept as its digit count where the value would be."""

    def __init__(self, literal: str) -> None:
        self.digits = len(literal.lstrip("-"))


def _unreadable(body: bytes) -> str | None:
    """Why a body Python's JSON parser would fail on without saying where: bytes that are not
    UTF-8 (their offset), or an integer of more digits than int() converts (its field). Parsed
    only when a run of that many digits is there at all (a malformed body is left to the route's
    parser, whose error names the position)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"request body is not UTF-8 (byte 0x{body[exc.start]:02x} at offset {exc.start})"
    limit = sys.get_int_max_str_digits()
    if not limit or not re.search(rf"[0-9]{{{limit + 1}}}", text):
        return None

    def parse_int(literal: str) -> int | _LongInt:
        return _LongInt(literal) if len(literal.lstrip("-")) > limit else int(literal)

    try:
        value = json.loads(text, parse_int=parse_int)
    except ValueError:
        return None
    found = _long_int(value, "")
    if found is None:  # the digits were inside a string
        return None
    where, long = found
    what = f"field {where}" if where else "request body"
    return f"{what}: integer has {long.digits} digits, more than {limit}"


def _long_int(value: Any, where: str) -> tuple[str, _LongInt] | None:
    """The first over-long integer in a parsed body and its place (`a.b[2]`); depth is bounded
    by the nesting check that runs before."""
    if isinstance(value, _LongInt):
        return where, value
    items: Any = ()
    if isinstance(value, dict):
        items = ((f"{where}.{k}" if where else str(k), v) for k, v in value.items())
    elif isinstance(value, list):
        items = ((f"{where}[{i}]", v) for i, v in enumerate(value))
    for place, item in items:
        found = _long_int(item, place)
        if found:
            return found
    return None


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
