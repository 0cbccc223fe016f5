"""Bodies that are not JSON text a parser can turn into values, sent to a real `hone serve`: bytes
that are not UTF-8, and an integer longer than Python's int-conversion limit. Every route that
takes a body answers with one line saying what is wrong and where, and nothing starts."""

from __future__ import annotations

import http.client
import json
import sys
import urllib.parse
from typing import Any

import pytest

LIMIT = sys.get_int_max_str_digits()
HUGE = b"9" * (LIMIT + 700)

#: every write route: one FastAPI parses into a model, the others parse their own (none allowed)
ROUTES = [
    "/api/studies",
    "/api/studies/alpha%231/stop",
    "/api/studies/beta%231/resume",
    "/api/projects/alpha/restore",
]


def post(server: Any, path: str, body: bytes) -> tuple[int, Any]:
    parts = urllib.parse.urlsplit(server.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    headers = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"}
    conn.request("POST", path, body=body, headers=headers)
    response = conn.getresponse()
    text = response.read()
    conn.close()
    return response.status, json.loads(text)


@pytest.mark.parametrize("path", ROUTES)
@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (
            b'{"project": "gamma", "engine": "r\xe9ndom"}',
            "request body is not UTF-8 (byte 0xe9 at offset 33)",
        ),
        (
            b'{"project": "gamma", "engine": "\xf0\x9f"}',  # a character cut short at the end
            "request body is not UTF-8 (byte 0xf0 at offset 32)",
        ),
        (
            b'{"project": "gamma", "budget": ' + HUGE + b"}",
            f"field budget: integer has {LIMIT + 700} digits, more than {LIMIT}",
        ),
        (
            b'{"project": "gamma", "x": {"y": [1, -' + HUGE + b"]}}",
            f"field x.y[1]: integer has {LIMIT + 700} digits, more than {LIMIT}",
        ),
        (b"-" + HUGE, f"request body: integer has {LIMIT + 700} digits, more than {LIMIT}"),
    ],
)
def test_a_body_python_cannot_read_is_named_and_starts_nothing(
    server: Any, path: str, body: bytes, detail: str
) -> None:
    runs = len(server.get("/api/runs"))
    assert post(server, path, body) == (400, {"detail": detail})
    assert len(server.get("/api/runs")) == runs


def test_a_long_float_and_unicode_text_still_reach_the_route(server: Any) -> None:
    """Only integers have the limit; a float of as many digits, and UTF-8 text, are JSON the
    route reads and judges itself (here: an unknown engine, a float for an int)."""
    status, answer = post(server, "/api/studies", b'{"project": "gamma", "engine": "r\xc3\xa9"}')
    assert status == 422 and answer["detail"][0]["loc"] == ["body", "engine"], answer
    status, answer = post(
        server, "/api/studies", b'{"project": "gamma", "budget": 0.' + HUGE + b"}"
    )
    assert status == 422 and answer["detail"][0]["loc"] == ["body", "budget"], answer
