"""Fixtures for tuning tests: a real kernel setting, a real PostgreSQL server."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy

SWAPPINESS = Path("/proc/sys/vm/swappiness")
PG_BIN = Path("/usr/lib/postgresql/15/bin")


@pytest.fixture
def swappiness():
    """vm.swappiness as it was; put back after the test whatever happened."""
    original = SWAPPINESS.read_text()
    yield int(original)
    SWAPPINESS.write_text(original)


@dataclass
class Postgres:
    """A PostgreSQL cluster of its own: initdb in a temporary folder, run as `postgres`, on a
    loopback port."""

    folder: Path
    port: int

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def ctl(self, *args: str | Path) -> None:
        subprocess.run(
            [
                "runuser",
                "-u",
                "postgres",
                "--",
                PG_BIN / "pg_ctl",
                "-D",
                self.folder / "data",
                *args,
            ],
            check=True,
            capture_output=True,
        )

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        self.ctl("-w", "-l", self.folder / "log", "-o", options, "start")

    def stop(self) -> None:
        self.ctl("-m", "immediate", "stop")


@contextlib.contextmanager
def _cluster() -> Iterator[Postgres]:
    folder = Path(tempfile.mkdtemp(prefix="hone-test-pg-"))
    shutil.chown(folder, "postgres")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    subprocess.run(
        [
            *("runuser", "-u", "postgres", "--", PG_BIN / "initdb"),
            *("-D", folder / "data", "-A", "trust", "-U", "postgres"),
        ],
        check=True,
        capture_output=True,
    )
    server = Postgres(folder, port)
    server.start()
    try:
        yield server
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def postgres() -> Iterator[Postgres]:
    """A server of the test's own (the test may stop it), deleted after the test."""
    with _cluster() as server:
        yield server


@pytest.fixture(scope="session")
def shared_postgres() -> Iterator[Postgres]:
    with _cluster() as server:
        yield server


@pytest.fixture
def postgres_url(shared_postgres: Postgres) -> str:
    """A fresh database on a server the session's tests share: a study database several
    machines would share."""
    name = f"t{uuid.uuid4().hex[:12]}"
    engine = sqlalchemy.create_engine(shared_postgres.url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sqlalchemy.text(f"CREATE DATABASE {name}"))
    engine.dispose()
    return shared_postgres.url.rsplit("/", 1)[0] + f"/{name}"
