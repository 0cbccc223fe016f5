"""`hone serve --origin` takes an origin as a browser's Origin header spells it: CORS matches
that header letter for letter, so `ui.example.com` or a trailing `/` was accepted and then
matched no request."""

from __future__ import annotations

from pathlib import Path

import pytest

from hone.serve.cli import cors_origin


@pytest.mark.parametrize(
    "given",
    ["ui.example.com", "https://ui.example.com/", "https://ui.example.com/app", "ftp://x",
     "https://", "https://ui.example.com?", "https://a@ui.example.com", "http://x:99999",
     "http://x:"],
)  # fmt: skip
def test_a_malformed_origin_is_one_line(given: str, hone_home: Path, hone_run) -> None:
    # --tls-cert alone is refused after the options are read: a missed check is no server
    line = hone_run("serve", "--origin", given, "--tls-cert", "cert.pem").one_line()
    assert line == (
        f"hone: serve: Invalid value for '--origin': {given!r} is not an origin: "
        "http(s)://host[:port] with no path, as in https://ui.example.com:8443"
    )
    assert not (hone_home / "serve" / "token").exists()


def test_an_origin_is_spelled_as_browsers_send_it() -> None:
    assert cors_origin("https://ui.example.com:8443") == "https://ui.example.com:8443"
    assert cors_origin("HTTPS://UI.Example.com:443") == "https://ui.example.com"
    assert cors_origin("http://[::1]:8080") == "http://[::1]:8080"
