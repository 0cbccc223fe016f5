"""A PostgreSQL cluster of its own for a shared study database: a copy of one initdb made per
process in a temporary folder, run as `postgres` (it refuses root) on a loopback port, deleted
afterwards. The workers and fault benchmarks and tests/tune start theirs here."""

from __future__ import annotations

import atexit
import contextlib
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PG_BIN = Path("/usr/lib/postgresql/15/bin")
AS_POSTGRES = ("runuser", "-u", "postgres", "--")


@dataclass
class Postgres:
    folder: Path
    port: int
    #: server settings (`-c` options), e.g. "fsync=off"
    settings: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def ctl(self, *args: str | Path) -> None:
        subprocess.run(
            [*AS_POSTGRES, PG_BIN / "pg_ctl", "-D", self.folder / "data", *args],
            check=True,
            capture_output=True,
        )

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1"
        options += "".join(f" -c {setting}" for setting in self.settings)
        self.ctl("-w", "-l", self.folder / "log", "-o", options, "start")

    def stop(self) -> None:
        self.ctl("-m", "immediate", "stop")


@contextlib.contextmanager
def cluster(*settings: str) -> Iterator[Postgres]:
    """A started cluster (the caller may stop it), stopped and deleted on exit."""
    folder = Path(tempfile.mkdtemp(prefix="hone-pg-"))
    shutil.chown(folder, "postgres")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # a copy of the process's one initdb: initdb took 1 to 4 s a cluster, the copy a tenth
    subprocess.run(["cp", "-a", _template() / "data", folder / "data"], check=True)
    server = Postgres(folder, port, settings)
    server.start()
    try:
        yield server
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)


@cache
def _template() -> Path:
    """An initialised data directory, made once per process (and deleted at its exit) for
    every cluster to copy. Without fsync: each cluster is thrown away after use."""
    folder = Path(tempfile.mkdtemp(prefix="hone-pg-template-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    shutil.chown(folder, "postgres")
    options = ("--no-sync", "-A", "trust", "-U", "postgres")
    subprocess.run(
        [*AS_POSTGRES, PG_BIN / "initdb", *options, "-D", folder / "data"],
        check=True,
        capture_output=True,
    )
    return folder
