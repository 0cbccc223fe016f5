"""Off loopback the token must not travel in clear unless the user says so; HTTPS works with a
certificate of the user's; the remote client never carries the token to another origin."""

from __future__ import annotations

import asyncio
import concurrent.futures
import http.server
import os
import socket
import ssl
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from conftest import ROOT
from forked_hone import run_hone

from benchmarks.web import free_port, stop_server
from hone.serve.cli import _listen


def hone(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "HONE_HOME": str(home), **(env or {})}
    return run_hone(*args, env=env, cwd=ROOT, timeout=60)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--host", "0.0.0.0"], "not a loopback address"),
        (["--origin", "*"], "CORS wildcard"),
        (["--port", "99999"], "serve: Invalid value for '--port'"),
        (["--tls-cert", "x.pem"], "go together"),
    ],
)
def test_unsafe_or_bad_serve_options_stop_before_anything(tmp_path, args, says) -> None:
    result = hone(tmp_path, "serve", *args)
    assert result.returncode == 2
    assert says in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "serve" / "token").exists()  # no token made that is never shown


def test_https_with_the_users_certificate(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hone",
            "serve",
            "--port",
            str(port),
            "--tls-cert",
            str(cert),
            "--tls-key",
            str(key),
        ],
        cwd=ROOT,
        env={**os.environ, "HONE_HOME": str(tmp_path / "home")},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        context = ssl.create_default_context(cafile=str(cert))
        for _ in range(100):
            try:
                with urllib.request.urlopen(
                    f"https://127.0.0.1:{port}/api/about", context=context, timeout=2
                ) as response:
                    assert response.status == 200
                    break
            except OSError:
                if process.poll() is not None:
                    pytest.fail(process.stdout.read())  # type: ignore[union-attr]
                threading.Event().wait(0.2)
        else:
            pytest.fail("no HTTPS answer")
    finally:
        stop_server(process)


class _Recorder(http.server.BaseHTTPRequestHandler):
    seen: ClassVar[list[str | None]] = []
    target = ""

    def do_GET(self) -> None:
        type(self).seen.append(self.headers.get("Authorization"))
        if self.target:
            self.send_response(302)
            self.send_header("Location", self.target + self.path)
            self.end_headers()
        else:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b"[]")

    def log_message(self, *args: object) -> None:
        pass


def _serve(handler: type) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    # shutdown() waits for serve_forever's next look at it: every 0.5 s by default
    serve = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    serve.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def test_the_token_never_follows_a_redirect_to_another_origin(tmp_path: Path) -> None:
    other = type("Other", (_Recorder,), {"seen": [], "target": ""})
    for elsewhere in _serve(other):
        redirector = type("Redirector", (_Recorder,), {"seen": [], "target": elsewhere})
        for url in _serve(redirector):
            result = hone(
                tmp_path, "remote", "--server", url, "studies", env={"HONE_TOKEN": "s3cret" * 4}
            )
            assert result.returncode == 2
            assert "another origin" in result.stderr
            assert redirector.seen == ["Bearer " + "s3cret" * 4]
            assert other.seen == []  # the other host never saw a request, let alone the token


def test_answers_are_not_held_back_behind_their_headers() -> None:
    """The connections of the socket `hone serve` listens on have Nagle off, as asyncio sets it
    on TCP sockets: its own socket, made with protocol 0, kept Nagle on, and every answer whose
    headers and body were written apart waited 40 ms for the client's delayed ACK."""

    async def accept_one() -> int:
        nodelay = asyncio.get_running_loop().create_future()

        def handle(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            sock = writer.get_extra_info("socket")
            nodelay.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        listening = _listen("127.0.0.1", 0)
        async with await asyncio.start_server(handle, sock=listening):
            port = listening.getsockname()[1]
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            result = await asyncio.wait_for(nodelay, 10)
            writer.close()
        return result

    # a loop of its own, in a thread: a browser test's Playwright may hold this thread's
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        assert pool.submit(asyncio.run, accept_one()).result(30) == 1
