"""Studies and trials in Optuna's RDB schema, so several machines can share one database and
Optuna's own tools can read what hone wrote. Each finished trial is committed at once."""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import logging
import os
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import optuna
import sqlalchemy
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
    distribution_to_json,
)
from optuna.storages._rdb import models  # Optuna's schema, written directly for speed
from optuna.storages._rdb.storage import _create_scoped_session
from optuna.trial import TrialState
from sqlalchemy.pool import NullPool

from hone.errors import HoneError, one_line
from hone.paths import default_storage_url
from hone.space import Boolean, Config, Domain, FloatRange, IntRange, SearchSpace

optuna.logging.set_verbosity(logging.WARNING)

#: The PostgreSQL advisory lock taken while Optuna's schema is created ("hone" in ASCII).
SCHEMA_LOCK = 0x686F6E65

#: Study states kept in the study's user attributes.
RUNNING, FINISHED, FAILED, INTERRUPTED = "running", "finished", "failed", "interrupted"


@dataclass
class TrialRecord:
    number: int
    phase: str  # baseline | search | confirm
    config: Config
    state: str  # complete | fail | running
    score: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    seconds: float | None = None
    benchmark_seconds: float | None = None
    apply_seconds: float | None = None
    round: int | None = None
    started: float | None = None  # POSIX time
    #: The machine during the reading (load1, steal_pct, others_cpu, cpu_mhz), and why it
    #: was disturbed (a `disturbed` phase: measured again).
    machine: dict[str, Any] | None = None
    disturbed: str | None = None
    worker: str | None = None  # the worker that ran it, in a study shared by several machines
    lost: bool = False  # its worker stopped reporting: the trial measured nothing

    @classmethod
    def from_stored(
        cls,
        number: int,
        attrs: dict[str, Any],
        params: Config,
        state: str,
        score: float | None,
        started: dt.datetime | None,
    ) -> TrialRecord:
        """A trial as hone wrote it: its configuration, metrics and timings are user attributes
        (`params` is the fallback for trials written by Optuna itself)."""
        return cls(
            number=number,
            phase=attrs.get("phase", "search"),
            config=dict(attrs.get("config", params)),
            state=state,
            score=score,
            metrics=dict(attrs.get("metrics", {})),
            error=attrs.get("error"),
            seconds=attrs.get("seconds"),
            benchmark_seconds=attrs.get("benchmark_seconds"),
            apply_seconds=attrs.get("apply_seconds"),
            round=attrs.get("round"),
            started=started.timestamp() if started else None,
            machine=attrs.get("machine"),
            disturbed=attrs.get("disturbed"),
            worker=attrs.get("worker"),
            lost=bool(attrs.get("lost", False)),
        )


class TrialClosed(HoneError):
    """The trial was ended by another process (a worker's lease ran out while it was cut off)."""


#: What closing a trial did: closed it; found it ended with this outcome; found another.
Closed = Literal["closed", "same", "other"]


@dataclass
class StudyRecord:
    name: str
    study_id: int
    attrs: dict[str, Any]

    @property
    def project(self) -> str:
        return str(self.attrs.get("project", self.name))

    @property
    def state(self) -> str:
        return str(self.attrs.get("state", RUNNING))


def distribution(domain: Domain) -> BaseDistribution:
    """The Optuna distribution that stores values of this domain faithfully."""
    if isinstance(domain, IntRange):
        return IntDistribution(
            domain.low, domain.high, log=domain.log, step=domain.step if not domain.log else 1
        )
    if isinstance(domain, FloatRange):
        return FloatDistribution(domain.low, domain.high, log=domain.log, step=domain.step)
    if isinstance(domain, Boolean):
        return CategoricalDistribution([False, True])
    return CategoricalDistribution(list(domain.values() or []))


class StudyStore:
    """A thin layer over optuna.storages.RDBStorage speaking hone's terms."""

    def __init__(self, url: str | None = None) -> None:
        self.url = url or default_storage_url()
        try:
            with _schema_locked(self.url):
                self.storage = optuna.storages.RDBStorage(
                    self.url, engine_kwargs=_engine_options(self.url)
                )
        except Exception as exc:  # SQLAlchemy raises many kinds; all mean "cannot open"
            cause = _cause(exc)
            raise HoneError(
                f"cannot open study storage {self.shown}: {cause}{_advice(cause)}"
            ) from None
        # Connections are closed when the store goes, or at exit at the latest: the command
        # line skips the garbage collection that would close them (cli.main.run), and SQLite
        # folds its write-ahead log back into the database on the last close.
        weakref.finalize(self, self.storage.engine.dispose)

    @property
    def shown(self) -> str:
        """The URL as messages show it: a password given in it (`user:pw@host`) masked."""
        try:
            return sqlalchemy.engine.make_url(self.url).render_as_string(hide_password=True)
        except sqlalchemy.exc.ArgumentError:
            return self.url

    # -- studies ---------------------------------------------------------------------------

    def create(self, project: str, attrs: dict[str, Any]) -> StudyRecord:
        existing = {s.study_name for s in self.storage.get_all_studies()}
        number = 1
        while f"{project}#{number}" in existing:
            number += 1
        name = f"{project}#{number}"
        study_id = self.storage.create_new_study([optuna.study.StudyDirection.MAXIMIZE], name)
        attrs = {"project": project, "state": RUNNING, "created": _now(), **attrs}
        for key, value in attrs.items():
            self.storage.set_study_user_attr(study_id, key, value)
        return StudyRecord(name, study_id, attrs)

    def update(self, study: StudyRecord, **attrs: Any) -> None:
        for key, value in attrs.items():
            self.storage.set_study_user_attr(study.study_id, key, value)
        study.attrs.update(attrs)

    def studies(self) -> list[StudyRecord]:
        return [
            StudyRecord(s.study_name, s._study_id, dict(s.user_attrs))
            for s in self.storage.get_all_studies()
        ]

    def find(self, name: str) -> StudyRecord:
        """A study by its full name (`memcached#2`), or the newest study of a project."""
        studies = self.studies()
        for study in studies:
            if study.name == name:
                return study
        mine = [s for s in studies if s.project == name]
        if not mine:
            raise HoneError(f"no study named {name!r} in {self.shown}")
        return max(mine, key=lambda s: s.study_id)

    # -- trials ----------------------------------------------------------------------------

    def start_trial(
        self,
        study: StudyRecord,
        space: SearchSpace,
        config: Config,
        phase: str,
        *,
        lease: bool = False,
        **attrs: Any,
    ) -> int:
        """Create a RUNNING trial with its parameters in one transaction; with `lease`, its first
        heartbeat too (Optuna's heartbeat table), so a trial is never without one.

        Optuna's own `create_new_trial(template_trial=...)` checks every parameter against
        every earlier trial of the study, which grows with the study; hone's distributions
        never change within a study, so it writes the rows of Optuna's schema directly."""
        params: dict[str, tuple[Any, BaseDistribution]] = {}
        for name, value in config.items():
            domain = space.domains.get(name)
            if domain is not None and domain.contains(value):
                # (a value read from the system outside the search space stays in `config`)
                params[name] = (value, distribution(domain))
        user_attrs = {"phase": phase, "config": dict(config), **attrs}
        with _create_scoped_session(self.storage.scoped_session) as session:
            trial = models.TrialModel(
                study_id=study.study_id,
                number=None,
                state=TrialState.RUNNING,
                datetime_start=dt.datetime.now(),
            )
            session.add(trial)
            session.flush()
            trial.number = trial.count_past_trials(session)
            session.add_all(
                models.TrialParamModel(
                    trial_id=trial.trial_id,
                    param_name=name,
                    param_value=dist.to_internal_repr(value),
                    distribution_json=distribution_to_json(dist),
                )
                for name, (value, dist) in params.items()
            )
            session.add_all(
                models.TrialUserAttributeModel(
                    trial_id=trial.trial_id, key=key, value_json=json.dumps(value)
                )
                for key, value in user_attrs.items()
            )
            if lease:
                session.add(models.TrialHeartbeatModel(trial_id=trial.trial_id))
            session.flush()
            return trial.trial_id

    def finish_trial(
        self,
        trial_id: int,
        *,
        score: float | None,
        metrics: dict[str, float],
        error: str | None = None,
        seconds: float | None = None,
        benchmark_seconds: float | None = None,
        apply_seconds: float | None = None,
        phase: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """Store the outcome; `seconds` is the whole trial, `benchmark_seconds` the part the
        benchmark itself took, `apply_seconds` setting the knobs and restarting the workload.
        `phase` replaces the phase given at the start; `extra` are further attributes (the
        machine's state during the reading)."""
        attrs: dict[str, Any] = {"metrics": metrics, **(extra or {})}
        if phase is not None:
            attrs["phase"] = phase
        timing = {
            "seconds": seconds,
            "benchmark_seconds": benchmark_seconds,
            "apply_seconds": apply_seconds,
        }
        for key, value in timing.items():
            if value is not None:
                attrs[key] = round(value, 4)
        failed = error is not None or score is None
        if failed:
            attrs["error"] = error or "no value"
        if self._close(trial_id, None if failed else score, attrs) == "other":
            raise TrialClosed(f"trial {trial_id} was closed by another process: result dropped")

    def fail_trial(self, trial_id: int, reason: str, **attrs: Any) -> bool:
        """Mark a RUNNING trial failed with its reason; False when it had already ended."""
        return self._close(trial_id, None, {"error": reason, **attrs}) == "closed"

    def _close(self, trial_id: int, score: float | None, attrs: dict[str, Any]) -> Closed:
        """End a trial that is still RUNNING, attributes, value and state in one transaction
        (the row is locked: two processes closing one trial cannot both succeed): `closed`.
        A trial that had ended is left as it is: `same` when it holds this very outcome (the
        commit went through and its reply was lost with the connection, a server restarting,
        so the call was tried again: the result is stored, not dropped), else `other`."""
        with _create_scoped_session(self.storage.scoped_session) as session:
            trial = models.TrialModel.find_or_raise_by_id(trial_id, session, for_update=True)
            table = models.TrialUserAttributeModel
            existing = {
                row.key: row
                for row in session.query(table).filter(
                    table.trial_id == trial_id, table.key.in_(list(attrs))
                )
            }
            if trial.state != TrialState.RUNNING:
                return "same" if _ended_so(trial, score, attrs, existing) else "other"
            for key, value in attrs.items():
                if key in existing:  # (the phase given at the start, replaced)
                    existing[key].value_json = json.dumps(value)
                else:
                    session.add(table(trial_id=trial_id, key=key, value_json=json.dumps(value)))
            if score is not None:
                stored, kind = models.TrialValueModel.value_to_stored_repr(score)
                session.add(
                    models.TrialValueModel(
                        trial_id=trial_id, objective=0, value=stored, value_type=kind
                    )
                )
            trial.state = TrialState.FAIL if score is None else TrialState.COMPLETE
            trial.datetime_complete = dt.datetime.now()
        return "closed"

    def fail_running(self, study: StudyRecord, reason: str) -> int:
        """Mark trials left RUNNING by a killed run as failed; returns how many."""
        count = 0
        for trial in self.storage.get_all_trials(study.study_id, deepcopy=False):
            if trial.state == TrialState.RUNNING:
                self.storage.set_trial_user_attr(trial._trial_id, "error", reason)
                self.storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
                count += 1
        return count

    def trials(self, study: StudyRecord) -> list[TrialRecord]:
        return [
            TrialRecord.from_stored(
                trial.number,
                trial.user_attrs,
                trial.params,
                trial.state.name.lower(),
                trial.value,
                trial.datetime_start,
            )
            for trial in self.storage.get_all_trials(study.study_id, deepcopy=False)
        ]


def require_existing(url: str | None) -> None:
    """For commands that only read studies: an SQLite file named with --storage but not there
    is a typo, not a database to create empty and list as having no studies."""
    if url is None:
        return
    try:
        parsed = sqlalchemy.engine.make_url(url)
    except sqlalchemy.exc.ArgumentError:
        return  # StudyStore says what is wrong with the URL
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or database in (None, "", ":memory:"):
        return
    if not Path(database).is_file():
        raise HoneError("no such study database", file=database)


@contextmanager
def _schema_locked(url: str) -> Iterator[None]:
    """Several workers opening a new PostgreSQL database at once would all create Optuna's
    tables and types, and all but one fail: the first to take this lock creates them. So would
    two hone commands opening a new SQLite file at once (`table studies already exists`):
    they take a lock on its folder."""
    if url.startswith("sqlite"):
        with _folder_locked(url):
            yield
        return
    if not url.startswith("postgresql"):
        yield
        return
    engine = sqlalchemy.create_engine(url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with engine.connect() as conn:
            conn.execute(sqlalchemy.text("SELECT pg_advisory_lock(:key)"), {"key": SCHEMA_LOCK})
            try:
                yield
            finally:
                conn.execute(
                    sqlalchemy.text("SELECT pg_advisory_unlock(:key)"), {"key": SCHEMA_LOCK}
                )
    finally:
        engine.dispose()


@contextmanager
def _folder_locked(url: str) -> Iterator[None]:
    """An exclusive lock on the folder of a SQLite database file (none for one in memory, or
    in a folder not there, where SQLite itself fails): no file of hone's beside the user's."""
    database = sqlalchemy.engine.make_url(url).database
    folder = None
    if database not in (None, "", ":memory:"):
        with suppress(OSError):
            folder = os.open(Path(database).resolve().parent, os.O_RDONLY | os.O_DIRECTORY)
    if folder is None:
        yield
        return
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        yield
    finally:
        os.close(folder)  # the lock goes with it


#: libpq's settings for a shared study database: a connection that cannot be made, or a
#: query whose packets go unanswered (a network cut), fails within seconds, for the worker to
#: wait and try again (`--db-wait`), instead of hanging for the kernel's TCP timeouts (minutes).
PG_CONNECT = {
    "connect_timeout": 10,
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
    "tcp_user_timeout": 30000,
}


def _engine_options(url: str) -> dict[str, Any]:
    if url.startswith("sqlite"):
        # Wait for another hone process's write instead of failing at once.
        return {"connect_args": {"timeout": 30}}
    if url.startswith("postgresql"):
        given = sqlalchemy.engine.make_url(url).query  # the URL's own settings win
        return {"connect_args": {k: v for k, v in PG_CONNECT.items() if k not in given}}
    return {}


@sqlalchemy.event.listens_for(sqlalchemy.engine.Engine, "connect")
def _sqlite_wal(connection: Any, record: Any) -> None:
    """SQLite in WAL mode with synchronous=NORMAL: a committed trial survives any crash or
    kill of hone (only a power cut may lose the last commits), at a fraction of the cost."""
    if type(connection).__module__.startswith("sqlite3"):
        cursor = connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()


def _now() -> str:
    return dt.datetime.now().astimezone().isoformat(timespec="seconds")


def _advice(cause: str) -> str:
    """What to do about a damaged SQLite file, said where the damage is reported: the studies
    are lost there, the knobs' originals are not (they are in the journal)."""
    if not any(w in cause for w in ("malformed", "not a database")):
        return ""
    return (
        " (the original values of the knobs are kept apart, in the journal: `hone restore"
        " PROJECT` works without this file; move it aside to start a new one, or try"
        " sqlite3's .recover on it)"
    )


def _cause(exc: BaseException) -> str:
    """The database's own words, one line: Optuna wraps a full disk in 'invalid data in the
    commit, e.g. exceeding max length', which blames the data."""
    while exc.__cause__ is not None or exc.__context__ is not None:
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return one_line(str(exc))


def _ended_so(
    trial: models.TrialModel,
    score: float | None,
    attrs: dict[str, Any],
    stored: dict[str, models.TrialUserAttributeModel],
) -> bool:
    """Whether an ended trial holds exactly the outcome `score` and `attrs` (its state, value
    and every attribute as stored)."""
    if trial.state != (TrialState.FAIL if score is None else TrialState.COMPLETE):
        return False
    if score is not None:
        values = [
            models.TrialValueModel.stored_repr_to_value(v.value, v.value_type) for v in trial.values
        ]
        if values != [score]:
            return False
    same = json.loads(json.dumps(attrs))  # as stored: tuples become lists
    return all(k in stored and json.loads(stored[k].value_json) == v for k, v in same.items())
