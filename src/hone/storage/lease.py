"""What lets several workers share one study safely: a lock on the study while a worker picks
its next proposal (so each proposal sees every trial started before it), and leases on running
trials (Optuna's heartbeat table, timed by the database's clock) so a trial whose worker was
killed or cut off is found and failed by the workers that remain."""

from __future__ import annotations

import fcntl
import json
import os
import threading
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from optuna.storages._rdb import models
from optuna.trial import TrialState

from hone.errors import HoneError
from hone.storage.outage import Outage, unreachable
from hone.storage.store import StudyStore

_held: dict[int, int] = {}  # lock key -> depth, in this process
_held_lock = threading.Lock()


@contextmanager
def study_locked(store: StudyStore, name: str) -> Iterator[None]:
    """Hold the lock named `name` across every worker of the database: a PostgreSQL advisory
    lock (released by the server if the worker dies), or a file lock beside a SQLite file.
    Re-entrant within a process."""
    key = zlib.crc32(f"hone:{name}".encode())
    with _held_lock:
        depth = _held.get(key, 0)
        _held[key] = depth + 1
    try:
        if depth:
            yield
            return
        dialect = store.storage.engine.dialect.name
        if dialect == "postgresql":
            with _advisory(store, key):
                yield
        elif dialect == "sqlite":
            with _file_lock(store, key):
                yield
        else:
            raise HoneError(f"hone worker needs PostgreSQL or SQLite storage, not {dialect}")
    finally:
        with _held_lock:
            _held[key] -= 1
            if not _held[key]:
                del _held[key]


@contextmanager
def try_locked(store: StudyStore, name: str) -> Iterator[Callable[[], bool] | None]:
    """Take the lock named `name` if no other worker holds it; yields None when another does,
    else a check that it is still held. Held for as long as the block runs, and released by
    the server (or the kernel, for a file lock) when the holder dies: the election of one
    worker for a job that outlives a lock wait (confirming the winner), with a successor
    elected if it is killed. A PostgreSQL lock is also released when the server restarts or
    drops the holder's connection: the check says so, before the holder writes as if it held
    it while a successor took over."""
    key = zlib.crc32(f"hone:{name}".encode())
    dialect = store.storage.engine.dialect.name
    if dialect == "postgresql":
        engine = store.storage.engine.execution_options(isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            taken = conn.execute(sa.text("SELECT pg_try_advisory_lock(:key)"), {"key": key})
            if not taken.scalar_one():
                yield None
                return
            try:
                yield lambda: _alive(conn)
            finally:
                # a lost connection took the lock with it
                with suppress(sa.exc.SQLAlchemyError):
                    conn.execute(sa.text("SELECT pg_advisory_unlock(:key)"), {"key": key})
    elif dialect == "sqlite":
        database = store.storage.engine.url.database
        if not database or database == ":memory:":
            yield _held_always
            return
        fd = os.open(f"{database}.{key:08x}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield None
                return
            yield _held_always
        finally:
            os.close(fd)
    else:
        raise HoneError(f"hone worker needs PostgreSQL or SQLite storage, not {dialect}")


def _alive(conn: sa.Connection) -> bool:
    """Whether the connection holding a lock still answers (the server keeps the lock while
    the connection lives)."""
    try:
        conn.execute(sa.text("SELECT 1"))
    except sa.exc.SQLAlchemyError:
        return False
    return True


def _held_always() -> bool:
    return True


@contextmanager
def _advisory(store: StudyStore, key: int) -> Iterator[None]:
    engine = store.storage.engine.execution_options(isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sa.text("SELECT pg_advisory_lock(:key)"), {"key": key})
        try:
            yield
        finally:
            conn.execute(sa.text("SELECT pg_advisory_unlock(:key)"), {"key": key})


@contextmanager
def _file_lock(store: StudyStore, key: int) -> Iterator[None]:
    database = store.storage.engine.url.database
    if not database or database == ":memory:":
        yield
        return
    path = Path(f"{database}.{key:08x}.lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@dataclass
class Running:
    trial_id: int
    number: int
    worker: str | None
    silent: float  # seconds since its last heartbeat, by the database's clock
    #: the lease its worker holds it with (its `--lease`); None for a trial started without
    lease: float | None = None


def running_trials(store: StudyStore, study_id: int) -> list[Running]:
    """The study's RUNNING trials that hold a lease, with the age of their last heartbeat."""
    t = models.TrialModel.__table__
    h = models.TrialHeartbeatModel.__table__
    ua = models.TrialUserAttributeModel.__table__
    worker = ua.alias("worker")
    lease = ua.alias("lease")
    query = (
        sa.select(t.c.trial_id, t.c.number, h.c.heartbeat, worker.c.value_json, lease.c.value_json)
        .join(h, h.c.trial_id == t.c.trial_id)
        .outerjoin(worker, sa.and_(worker.c.trial_id == t.c.trial_id, worker.c.key == "worker"))
        .outerjoin(lease, sa.and_(lease.c.trial_id == t.c.trial_id, lease.c.key == "lease_seconds"))
        .where(t.c.study_id == study_id, t.c.state == TrialState.RUNNING)
    )
    with store.storage.engine.connect() as conn:
        now = conn.execute(sa.select(sa.func.now())).scalar_one().replace(tzinfo=None)
        rows = conn.execute(query).all()
    return [
        Running(
            trial_id,
            number,
            json.loads(worker_json) if worker_json else None,
            (now - beat.replace(tzinfo=None)).total_seconds(),
            json.loads(lease_json) if lease_json else None,
        )
        for trial_id, number, beat, worker_json, lease_json in rows
    ]


def started_since(store: StudyStore, study_id: int, number: int) -> list[dict[str, Any]]:
    """The configurations of the study's trials numbered above `number`: what other workers
    started since a look at the study (one small query)."""
    t = models.TrialModel.__table__
    ua = models.TrialUserAttributeModel.__table__
    query = (
        sa.select(ua.c.value_json)
        .join(t, t.c.trial_id == ua.c.trial_id)
        .where(
            t.c.study_id == study_id,
            t.c.number > number,
            ua.c.key == "config",
        )
    )
    with store.storage.engine.connect() as conn:
        return [json.loads(row) for row in conn.execute(query).scalars()]


class Heartbeat:
    """A thread that renews the lease of the trial this worker runs, every `interval` seconds.
    A failed renewal is retried at the next beat: the lease is what tells the others. Each
    beat tells `outage` whether the database answered."""

    def __init__(self, store: StudyStore, interval: float, outage: Outage) -> None:
        self.store = store
        self.interval = interval
        self.outage = outage
        self.trial_id: int | None = None
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="hone-heartbeat", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self.interval + 5)

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            trial_id = self.trial_id
            if trial_id is None:
                continue
            try:
                self.store.storage.record_heartbeat(trial_id)
                self.error = None
                self.outage.answered()
            except Exception as exc:  # a lost database: the run waits for it when it next writes
                self.error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                if unreachable(exc):
                    self.outage.failed()
