"""Riding out a shared database that stops answering for a while (a PostgreSQL restart, a
network cut): a worker's database calls are tried again with a bounded backoff for up to a
limit, and it says once that it waits, naming the host but never the password. Beyond the
limit it stops like any failed worker. Errors that are not about reaching the database (a
wrong query, a constraint) are raised at once."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import sqlalchemy

from hone.errors import HoneError, one_line

T = TypeVar("T")

#: seconds between tries: doubled after each, up to the longest
FIRST_DELAY, LONGEST_DELAY = 0.5, 5.0
#: how long a worker waits for the database by default (`--db-wait`), and the most it may
DEFAULT_WAIT, MAX_WAIT = 300.0, 86400.0
WAIT_RANGE = "--db-wait must be between 0 and 86400 seconds, not {wait:g}"


class DatabaseLost(HoneError):
    """The database did not answer for longer than the worker may wait."""


def unreachable(exc: BaseException | None) -> bool:
    """Whether `exc` (or what it wraps: Optuna wraps SQLAlchemy's errors) says the database
    could not be reached: refused, reset, shut down, starting up, out of resources. DBAPI's
    OperationalError is that class of error, as opposed to a wrong query or a constraint."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, sqlalchemy.exc.DBAPIError) and exc.connection_invalidated:
            return True
        if isinstance(exc, sqlalchemy.exc.OperationalError | sqlalchemy.exc.InterfaceError):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def where(url: str) -> str:
    """host:port/database of a database URL: what a message may show of it (no user, no
    password)."""
    try:
        parsed = sqlalchemy.engine.make_url(url)
    except sqlalchemy.exc.ArgumentError:
        return "(unparsable URL)"
    if parsed.get_backend_name() == "sqlite":
        return parsed.database or ":memory:"
    host = parsed.host or str(parsed.query.get("host") or "localhost")
    port = f":{parsed.port}" if parsed.port else ""
    return f"{host}{port}/{parsed.database or ''}"


def _cause(exc: BaseException) -> str:
    """The database driver's own words, their first line (libpq adds a hint on the next)."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return one_line(str(exc).strip().split("\n", 1)[0]) or type(exc).__name__


class Outage:
    """This worker's view of whether the database answers, shared by its main thread and its
    heartbeat thread. `since_contact` tells the lease logic how long this worker could see the
    others' heartbeats: a trial that looks silent only because nobody reached the database
    is not lost."""

    def __init__(self, url: str, limit: float, say: Callable[[str], None]) -> None:
        self.where = where(url)
        self.limit = limit
        self.say = say
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self._back_at = -math.inf

    def failed(self) -> None:
        with self._lock:
            if self._down_since is None:
                self._down_since = time.monotonic()

    def answered(self) -> None:
        with self._lock:
            if self._down_since is not None:
                self._down_since = None
                self._back_at = time.monotonic()

    def since_contact(self) -> float:
        """Seconds since the database answered again after it last failed (infinite if it
        never failed)."""
        with self._lock:
            if self._down_since is not None:
                return 0.0
            return time.monotonic() - self._back_at

    def call(self, fn: Callable[..., T], *args: object, **kwargs: object) -> T:
        """`fn(*args, **kwargs)`, tried again while the database cannot be reached, for up to
        `limit` seconds of waiting; then DatabaseLost. `fn` must be safe to run again after a
        failure: a transaction, a read, or a lock taken anew."""
        waiting_since: float | None = None
        delay = FIRST_DELAY
        while True:
            try:
                result = fn(*args, **kwargs)
            except Exception as exc:
                if not unreachable(exc):
                    raise
                self.failed()
                now = time.monotonic()
                left = (waiting_since or now) + self.limit - now
                if left <= 0:
                    raise DatabaseLost(
                        f"the database at {self.where} did not answer for {self.limit:g} s"
                        f" (--db-wait): {_cause(exc)}"
                    ) from None
                if waiting_since is None:
                    waiting_since = now
                    self.say(
                        f"waiting for the database at {self.where} ({_cause(exc)}); "
                        f"retrying for up to {self.limit:g} s"
                    )
                time.sleep(min(delay, left))
                delay = min(delay * 2, LONGEST_DELAY)
                continue
            self.answered()
            if waiting_since is not None:
                waited = time.monotonic() - waiting_since
                self.say(f"the database at {self.where} answers again (waited {waited:.0f} s)")
            return result
