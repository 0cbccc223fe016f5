"""`hone serve --tls-cert/--tls-key` with a missing or non-PEM file: one line before a token
is made; it ended in ssl's traceback after the server said it was listening."""

from __future__ import annotations

import subprocess
from pathlib import Path

from hone.serve.cli import _check_tls


def test_a_missing_certificate_is_one_line(tmp_path: Path, hone_home: Path, hone_run) -> None:
    cert = tmp_path / "cert.pem"
    line = hone_run("serve", "--tls-cert", str(cert), "--tls-key", str(cert)).one_line()
    assert line == f"hone: {cert}: no such file"
    assert not (hone_home / "serve" / "token").exists()


def test_an_empty_certificate_is_one_line(tmp_path: Path, hone_run) -> None:
    cert = tmp_path / "cert.pem"
    cert.write_text("")
    line = hone_run("serve", "--tls-cert", str(cert), "--tls-key", str(cert)).one_line()
    assert line.startswith(f"hone: {cert}: --tls-cert/--tls-key: not a PEM certificate")


def test_a_good_pair_passes(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-subj", "/CN=localhost", "-days", "1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    _check_tls(cert, key)
