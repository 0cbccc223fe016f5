"""Fixtures for tuning tests: a real kernel setting, a real PostgreSQL server."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

SWAPPINESS = Path("/proc/sys/vm/swappiness")
PG_BIN = Path("/usr/lib/postgresql/15/bin")


@pytest.fixture
def swappiness():
    """vm.swappiness as it was; put back after the test whatever happened."""
    original = SWAPPINESS.read_text()
    yield int(original)
    SWAPPINESS.write_text(original)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A PostgreSQL cluster of its own (initdb in a temporary folder, run as `postgres`, on a
    loopback port), stopped and deleted after the test: a study database several machines share."""
    folder = Path(tempfile.mkdtemp(prefix="hone-test-pg-"))
    shutil.chown(folder, "postgres")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    run = ["runuser", "-u", "postgres", "--"]
    data = folder / "data"
    subprocess.run(
        [*run, PG_BIN / "initdb", "-D", data, "-A", "trust", "-U", "postgres"],
        check=True,
        capture_output=True,
    )
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(
        [*run, PG_BIN / "pg_ctl", "-D", data, "-w", "-l", folder / "log", "-o", options, "start"],
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*run, PG_BIN / "pg_ctl", "-D", data, "-m", "immediate", "stop"], capture_output=True
        )
        shutil.rmtree(folder, ignore_errors=True)
