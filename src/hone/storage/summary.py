"""What the API says about studies: summaries for the list in two SQL queries whatever the number
of studies, and full views of one study (trials, best, baseline band, gains)."""

from __future__ import annotations

import json
import math
import os
import socket
from collections import defaultdict
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa
from optuna.storages._rdb import models
from optuna.trial import TrialState

from hone.storage import StudyRecord, StudyStore
from hone.storage.store import RUNNING, TrialRecord
from hone.tune.stats import gain_interval

#: Study attributes the API passes on as they are.
PUBLIC_ATTRS = (
    "project",
    "state",
    "engine",
    "budget",
    "apply",
    "tuning",
    "options",
    "created",
    "error",
    "metrics",
    "knobs",
    "space",
    "baseline_metrics",
    "baseline_score",
    "baseline_cv",
    "quality",
    "result",
    "why",
    "scores",
    "selection",
)


def single_metric(attrs: dict[str, Any]) -> bool:
    """True when the score is one metric's raw value (gains are then relative, in %)."""
    scored = [m for m in attrs.get("metrics", []) if m.get("weight", 1) > 0]
    return len(scored) == 1


def gain_of(attrs: dict[str, Any], score: float | None) -> float | None:
    """The same gain the tuner reports: % of the baseline for one metric, else the difference
    of scores that are already percentages (weighted, or a worker's gain over its baseline)."""
    base = attrs.get("baseline_score")
    if score is None or base is None:
        return None
    if attrs.get("scores") == "relative" or not single_metric(attrs):
        return float(score - base)
    return float((score - base) / abs(base) * 100.0) if base else None


def summaries(store: StudyStore) -> list[dict[str, Any]]:
    """One row per study: state, trials, failures, best search score, gains."""
    attrs: dict[int, dict[str, Any]] = defaultdict(dict)
    s, ua = models.StudyModel.__table__, models.StudyUserAttributeModel.__table__
    with store.storage.engine.connect() as conn:
        names = dict(conn.execute(sa.select(s.c.study_id, s.c.study_name)).all())
        for study_id, key, value in conn.execute(
            sa.select(ua.c.study_id, ua.c.key, ua.c.value_json).where(
                sa.or_(ua.c.key.in_([*PUBLIC_ATTRS, "pid", "machine"]), ua.c.key.like("worker:%"))
            )
        ):
            attrs[study_id][key] = json.loads(value)
        counts, best = _trial_counts(conn)
        running = _running_by_worker(conn)
        held = {sid: _best_held_back(conn, sid, attrs[sid]) for sid in names}
    return [
        summary_row(
            name,
            study_id,
            attrs[study_id],
            counts[study_id],
            best.get(study_id),
            running.get(study_id, {}),
            held[study_id],
        )
        for study_id, name in sorted(names.items())
    ]


def _best_held_back(conn: sa.Connection, study_id: int, attrs: dict[str, Any]) -> list[str]:
    """The risky values (`knob=value`) of the best search trial that the study held back (they
    need --allow-risk): its gain is then not one the run applied or would apply. Read only for
    a study whose decision set a risky winner aside, so one query for those alone."""
    risk = (attrs.get("result") or {}).get("risk") or {}
    changes = risk.get("changes") or _changes_in_words(risk)
    if risk.get("allowed") or not changes:
        return []
    t, v = models.TrialModel.__table__, models.TrialValueModel.__table__
    ta = models.TrialUserAttributeModel.__table__
    phase, config = ta.alias("phase"), ta.alias("config")
    row = conn.execute(
        sa.select(config.c.value_json)
        .select_from(t)
        .join(v, v.c.trial_id == t.c.trial_id)
        .join(config, sa.and_(config.c.trial_id == t.c.trial_id, config.c.key == "config"))
        .join(phase, sa.and_(phase.c.trial_id == t.c.trial_id, phase.c.key == "phase"))
        .where(
            t.c.study_id == study_id,
            t.c.state == TrialState.COMPLETE,
            phase.c.value_json == json.dumps("search"),
        )
        .order_by(v.c.value.desc())
        .limit(1)
    ).first()
    best = json.loads(row[0]) if row else {}
    return [
        f"{c['knob']}={c['value']}"
        for c in changes
        if c["knob"] in best and str(best[c["knob"]]) == str(c["value"])
    ]


def _changes_in_words(risk: dict[str, Any]) -> list[dict[str, Any]]:
    """A record written before `changes` was stored: the risky winner's values that its
    `risks` lines name (each begins `knob=value (kind risk)`)."""
    config = (risk.get("risky") or {}).get("config") or {}
    lines = risk.get("risks") or []
    return [
        {"knob": knob, "value": str(value)}
        for knob, value in config.items()
        if any(line.startswith(f"{knob}={value} (") for line in lines)
    ]


#: A worker's trial and whether it went without a heartbeat for longer than its lease.
Running = dict[str, tuple[int, bool]]


def _running_by_worker(conn: sa.Connection, study_id: int | None = None) -> dict[int, Running]:
    """The trial each worker of a shared study is running now, per study, and whether its
    last heartbeat is older than its lease (by the database's clock)."""
    t = models.TrialModel.__table__
    h = models.TrialHeartbeatModel.__table__
    ua = models.TrialUserAttributeModel.__table__
    worker, lease = ua.alias("worker"), ua.alias("lease")
    query = (
        sa.select(t.c.study_id, t.c.number, worker.c.value_json, h.c.heartbeat, lease.c.value_json)
        .join(worker, sa.and_(worker.c.trial_id == t.c.trial_id, worker.c.key == "worker"))
        .outerjoin(h, h.c.trial_id == t.c.trial_id)
        .outerjoin(lease, sa.and_(lease.c.trial_id == t.c.trial_id, lease.c.key == "lease_seconds"))
        .where(t.c.state == TrialState.RUNNING)
    )
    if study_id is not None:
        query = query.where(t.c.study_id == study_id)
    found: dict[int, Running] = defaultdict(dict)
    rows = conn.execute(query).all()
    now = conn.execute(sa.select(sa.func.now())).scalar_one().replace(tzinfo=None) if rows else None
    for sid, number, name, beat, lease_json in rows:
        limit = json.loads(lease_json) if lease_json else None
        age = (now - beat.replace(tzinfo=None)).total_seconds() if now and beat else None
        silent = age is not None and isinstance(limit, int | float) and age > limit
        found[sid][json.loads(name)] = (number, silent)
    return found


def running_workers(store: StudyStore, study_id: int) -> Running:
    """The trial each worker of the study is running now (`hone show`)."""
    with store.storage.engine.connect() as conn:
        return _running_by_worker(conn, study_id).get(study_id, {})


def workers_of(attrs: dict[str, Any], running: Running) -> list[dict[str, Any]]:
    """The workers of a shared study: where each runs, its state and the trial it runs now. A
    worker whose trial went without a heartbeat for longer than its lease is `silent`: killed,
    crashed or cut off, and no other worker has failed its trial as lost yet (none may be
    left to do it)."""
    found = []
    for key in sorted(k for k in attrs if k.startswith("worker:")):
        record = attrs[key] if isinstance(attrs[key], dict) else {}
        name = key.removeprefix("worker:")
        number, silent = running.get(name, (None, False))
        state = record.get("state")
        found.append(
            {
                "id": name,
                "host": record.get("host"),
                "pid": record.get("pid"),
                "state": "silent" if silent and state == "running" else state,
                "running": number,
                "baseline_metrics": record.get("baseline_metrics"),
                "baseline_cv": record.get("baseline_cv"),
                "error": record.get("error"),
            }
        )
    return found


def _trial_counts(
    conn: sa.Connection, study_id: int | None = None
) -> tuple[dict[int, dict[str, int]], dict[int, float]]:
    """Trials by state, and the best search score, of every study (or one), in one query."""
    t, v = models.TrialModel.__table__, models.TrialValueModel.__table__
    phase = models.TrialUserAttributeModel.__table__.alias("phase")
    counts: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    best: dict[int, float] = {}
    query = (
        sa.select(
            t.c.study_id, t.c.state, phase.c.value_json, sa.func.count(), sa.func.max(v.c.value)
        )
        .select_from(t)
        .outerjoin(v, v.c.trial_id == t.c.trial_id)
        .outerjoin(phase, sa.and_(phase.c.trial_id == t.c.trial_id, phase.c.key == "phase"))
        .group_by(t.c.study_id, t.c.state, phase.c.value_json)
    )
    if study_id is not None:
        query = query.where(t.c.study_id == study_id)
    for sid, state, phase_json, count, top in conn.execute(query):
        state_name = getattr(state, "name", str(state)).lower()
        counts[sid][state_name] += count
        in_search = phase_json is None or json.loads(phase_json) == "search"
        if in_search and state_name == "complete" and top is not None:
            best[sid] = max(top, best.get(sid, -math.inf))
    return counts, best


def _baseline_scores(conn: sa.Connection, study_id: int) -> list[float]:
    t, v = models.TrialModel.__table__, models.TrialValueModel.__table__
    phase = models.TrialUserAttributeModel.__table__
    query = (
        sa.select(v.c.value)
        .join(t, t.c.trial_id == v.c.trial_id)
        .join(phase, phase.c.trial_id == t.c.trial_id)
        .where(
            t.c.study_id == study_id,
            phase.c.key == "phase",
            phase.c.value_json == json.dumps("baseline"),
            v.c.value.is_not(None),
        )
    )
    return [float(value) for (value,) in conn.execute(query)]


def summary_row(
    name: str,
    study_id: int,
    attrs: dict[str, Any],
    counts: dict[str, int],
    best_score: float | None,
    running: Running | None = None,
    held_back: list[str] | None = None,
) -> dict[str, Any]:
    result = attrs.get("result") or {}
    confirmed = result.get("gain") or {}
    low, high = gain_interval(confirmed) if confirmed else (None, None)
    return {
        "name": name,
        "id": study_id,
        "project": attrs.get("project", name),
        "state": attrs.get("state", RUNNING),
        "alive": process_alive(attrs) if attrs.get("state", RUNNING) == RUNNING else None,
        "engine": attrs.get("engine"),
        "budget": attrs.get("budget"),
        "created": attrs.get("created"),
        "trials": sum(counts.values()),
        "failures": counts.get("fail", 0),
        "outcome": result.get("outcome"),
        "best_score": best_score,
        "best_gain": gain_of(attrs, best_score),
        "best_held_back": held_back or [],
        "gain": confirmed.get("mean"),
        "gain_low": _finite(low),
        "gain_high": _finite(high),
        "gain_half_width": None if low is None or high is None else _finite((high - low) / 2),
        "baseline_score": attrs.get("baseline_score"),
        "workers": workers_of(attrs, running or {}),
    }


def process_alive(attrs: dict[str, Any]) -> bool | None:
    """Whether the process that runs the study still exists: None when that cannot be known
    here (no pid, or a pid of another machine: a study in a database several machines share,
    whose pids mean nothing on this one)."""
    pid = attrs.get("pid")
    if not isinstance(pid, int) or pid <= 0 or not on_this_machine(attrs):
        return None
    return pid_alive(pid)


def this_machine() -> str:
    """What a recorded pid is a pid of: this boot of this machine's kernel and the pid
    namespace this process sees (containers of one machine share its boot but not their
    pids). Recorded beside every pid that a database shared by several machines may hold."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = socket.gethostname()
    try:
        space = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        space = 0
    return f"{boot}/{space}"


def on_this_machine(record: dict[str, Any]) -> bool:
    """Whether the pid in a study's or worker's record is one of this machine's: by its
    `machine` (this_machine); a record made before hone kept it, by its host name if it has
    one, else taken as this machine's (a study of a local database)."""
    if record.get("machine") is not None:
        return bool(record["machine"] == this_machine())
    if record.get("host") is not None:
        return bool(record["host"] == socket.gethostname())
    return True


def pid_alive(pid: Any) -> bool:
    """Whether a process of this id exists on this machine (a non-id: no)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, as another user's
        return True
    return True


def _finite(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def find(store: StudyStore, name: str) -> StudyRecord | None:
    """A study by its full name, or the newest study of a project (as `StudyStore.find`),
    reading only that study's attributes."""
    s, ua = models.StudyModel.__table__, models.StudyUserAttributeModel.__table__
    with store.storage.engine.connect() as conn:
        study_id = conn.execute(sa.select(s.c.study_id).where(s.c.study_name == name)).scalar()
        if study_id is None:
            study_id = conn.execute(
                sa.select(sa.func.max(ua.c.study_id)).where(
                    ua.c.key == "project", ua.c.value_json == json.dumps(name)
                )
            ).scalar()
        if study_id is None:
            return None
        full_name = conn.execute(
            sa.select(s.c.study_name).where(s.c.study_id == study_id)
        ).scalar_one()
        attrs = {
            key: json.loads(value)
            for key, value in conn.execute(
                sa.select(ua.c.key, ua.c.value_json).where(ua.c.study_id == study_id)
            )
        }
    return StudyRecord(full_name, study_id, attrs)


def read_trials(store: StudyStore, study: StudyRecord) -> list[TrialRecord]:
    """The study's trials as `StudyStore.trials` gives them, in two SQL queries: Optuna's
    `get_all_trials` builds a full object per trial and takes most of a second at 1,000."""
    t, v = models.TrialModel.__table__, models.TrialValueModel.__table__
    ta = models.TrialUserAttributeModel.__table__
    attrs: dict[int, dict[str, Any]] = defaultdict(dict)
    with store.storage.engine.connect() as conn:
        rows = conn.execute(
            sa.select(
                t.c.trial_id, t.c.number, t.c.state, t.c.datetime_start, v.c.value, v.c.value_type
            )
            .select_from(t)
            .outerjoin(v, sa.and_(v.c.trial_id == t.c.trial_id, v.c.objective == 0))
            .where(t.c.study_id == study.study_id)
            .order_by(t.c.number)
        ).all()
        for trial_id, key, value in conn.execute(
            sa.select(ta.c.trial_id, ta.c.key, ta.c.value_json)
            .join(t, t.c.trial_id == ta.c.trial_id)
            .where(t.c.study_id == study.study_id)
        ):
            attrs[trial_id][key] = json.loads(value)
    if any("config" not in attrs[row.trial_id] for row in rows):
        return store.trials(study)  # not written by hone: Optuna's parameters are the config
    return [
        TrialRecord.from_stored(
            row.number,
            attrs[row.trial_id],
            {},
            getattr(row.state, "name", str(row.state)).lower(),
            _stored_value(row.value, row.value_type),
            row.datetime_start,
        )
        for row in rows
    ]


def _stored_value(value: float | None, kind: Any) -> float | None:
    name = getattr(kind, "name", str(kind or ""))
    if name.endswith("INF_POS"):
        return math.inf
    if name.endswith("INF_NEG"):
        return -math.inf
    return value


def trial_dict(trial: TrialRecord) -> dict[str, Any]:
    data = {f.name: getattr(trial, f.name) for f in fields(trial)}
    data["metrics"] = {k: _finite(x) for k, x in trial.metrics.items()}
    data["score"] = _finite(trial.score)
    return data


def detail(store: StudyStore, study: StudyRecord) -> dict[str, Any]:
    """A study's attributes, summary and baseline band (mean ± 2 standard deviations of the
    baseline runs: the noise a trial must beat), from aggregate queries only."""
    attrs = study.attrs
    with store.storage.engine.connect() as conn:
        counts, best = _trial_counts(conn, study.study_id)
        base = _baseline_scores(conn, study.study_id)
        running = _running_by_worker(conn, study.study_id)
        held = _best_held_back(conn, study.study_id, attrs)
    row = summary_row(
        study.name,
        study.study_id,
        attrs,
        counts[study.study_id],
        best.get(study.study_id),
        running.get(study.study_id, {}),
        held,
    )
    band = None
    if base:
        mean = float(np.mean(base))
        spread = 2 * float(np.std(base, ddof=1)) if len(base) > 1 else 0.0
        band = {"mean": mean, "low": mean - spread, "high": mean + spread, "runs": len(base)}
    return {
        **row,
        "attrs": {k: attrs[k] for k in PUBLIC_ATTRS if k in attrs},
        "single_metric": single_metric(attrs),
        "band": band,
    }


def best_of(study: StudyRecord, trials: list[TrialRecord]) -> dict[str, Any]:
    """The confirmed best when the study finished, else the best search trial so far. Every
    key is always there (null where it does not apply), whichever the source."""
    result = study.attrs.get("result") or {}
    if result.get("best"):
        return {
            "source": "confirmed",
            "trial": None,
            "config": result["best"],
            "metrics": result.get("best_metrics") or {},
            "gain": (result.get("gain") or {}).get("mean"),
            "outcome": result.get("outcome"),
            "reason": result.get("reason"),
        }
    done = [t for t in trials if t.phase == "search" and t.score is not None]
    if not done:
        return {**_NO_BEST, "source": "none"}
    top = max(done, key=lambda t: t.score or -math.inf)
    return {
        **_NO_BEST,
        "source": "search",
        "trial": top.number,
        "config": top.config,
        "metrics": trial_dict(top)["metrics"],
        "gain": gain_of(study.attrs, top.score),
    }


_NO_BEST = {
    "trial": None,
    "config": None,
    "metrics": {},
    "gain": None,
    "outcome": None,
    "reason": None,
}
