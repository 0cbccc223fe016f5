"""Fixtures for tuning tests: a real kernel setting, a real PostgreSQL server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy
from swappiness_project import SWAPPINESS

from benchmarks.tune.postgres import Postgres, cluster


@pytest.fixture
def swappiness():
    """vm.swappiness as it was; put back after the test whatever happened."""
    original = SWAPPINESS.read_text()
    yield int(original)
    SWAPPINESS.write_text(original)


@pytest.fixture
def postgres() -> Iterator[Postgres]:
    """A server of the test's own (the test may stop it), deleted after the test."""
    with cluster("fsync=off") as server:
        yield server


@pytest.fixture(scope="session")
def shared_postgres() -> Iterator[Postgres]:
    with cluster("fsync=off") as server:
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
