"""Studies: list, detail, trials, best, importance, live events; start, stop, resume, restore."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any, Literal

import sqlalchemy as sa
from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse
from optuna.storages._rdb import models
from pydantic import BaseModel, ConfigDict, Field, field_validator

from hone.errors import HoneError
from hone.optimizers import optimizer_names
from hone.output import finite
from hone.serve.deps import NO_BODY, find_study, store
from hone.serve.runs import Run, RunManager
from hone.storage import StudyStore
from hone.storage.store import RUNNING, TrialRecord
from hone.storage.summary import (
    best_of,
    detail,
    find,
    process_alive,
    read_trials,
    summaries,
    trial_dict,
)
from hone.tune.views import knob_insight

router = APIRouter(prefix="/api", tags=["studies"])
Store = Depends(store)


class StartRequest(BaseModel):
    """Start a new study of a project the server was given (`hone serve --project`). Unknown
    fields and values of the wrong type are refused, never guessed at."""

    model_config = ConfigDict(extra="forbid", strict=True)

    project: str = Field(max_length=200)
    engine: str | None = Field(None, max_length=50)
    budget: int | None = Field(None, ge=1, le=100_000)
    baseline: int | None = Field(None, ge=1, le=100)
    seed: int | None = Field(None, ge=0, le=2**31 - 1)
    apply: Literal["auto", "always", "never"] | None = None

    @field_validator("engine")
    @classmethod
    def _known_engine(cls, engine: str | None) -> str | None:
        """Checked here, not in the route, so that its 422 names the field like every other."""
        if engine is not None and engine.lower() not in optimizer_names():
            raise ValueError(f"unknown engine {engine!r}; one of {', '.join(optimizer_names())}")
        return engine


def runs(request: Request) -> RunManager:
    return request.app.state.runs


@router.get("/studies")
def list_studies(db: StudyStore = Store) -> list[dict[str, Any]]:
    """Every study with its state, trials, failures and gains (newest last)."""
    return summaries(db)


@router.get("/studies/{name:path}/trials")
def get_trials(name: str, db: StudyStore = Store) -> JSONResponse:
    """Every trial in order: phase, configuration, state, score, metrics, failure reason."""
    study = find_study(db, name)
    # (JSONResponse is strict JSON: a non-finite value stored by any writer would be a 500)
    return JSONResponse(finite([trial_dict(t) for t in read_trials(db, study)]))


@router.get("/studies/{name:path}/best")
def get_best(name: str, db: StudyStore = Store) -> dict[str, Any]:
    study = find_study(db, name)
    return best_of(study, read_trials(db, study))


@router.get("/studies/{name:path}/importance")
def get_importance(name: str, request: Request, db: StudyStore = Store) -> list[dict[str, Any]]:
    """Each knob's share of what explains the scores, most important first, with the effect
    curve of the first three (empty with fewer than 4 finished trials)."""
    study = find_study(db, name)
    key = (db.url, study.study_id, _fingerprint(db, study.study_id))
    cache = request.app.state.importance
    if key not in cache:
        if len(cache) > 100:
            cache.clear()
        cache[key] = knob_insight(study.attrs, read_trials(db, study))
    return cache[key]


@router.get("/projects")
def list_projects(request: Request) -> list[dict[str, Any]]:
    """Projects this server may start, and whether a run of each is going."""
    manager = runs(request)
    return [
        {"name": name, "running": manager.active(name) is not None}
        for name in sorted(manager.projects)
    ]


@router.get("/engines")
def list_engines() -> list[str]:
    return optimizer_names()


@router.get("/runs")
def list_runs(request: Request) -> list[dict[str, Any]]:
    return [run.describe() for run in runs(request).runs.values()]


@router.post("/studies", status_code=202)
def start_study(body: StartRequest, request: Request, db: StudyStore = Store) -> dict[str, Any]:
    options = body.model_dump(exclude={"project"})
    return _launch(request, db, body.project, resume=False, **options).describe()


@router.post("/studies/{name:path}/resume", status_code=202, dependencies=NO_BODY)
def resume_study(name: str, request: Request, db: StudyStore = Store) -> dict[str, Any]:
    """Resume the named study. A run resumes its project's newest study, so an older one is
    refused rather than another study resumed in its place. It goes on with the study's own
    engine, budget and apply policy, as every resumed run does (Tuner._open_study)."""
    study = find_study(db, name)
    if study.state == "finished":
        raise HTTPException(409, f"study {study.name} already finished")
    newest = find_study(db, study.project)
    if newest.name != study.name:
        raise HTTPException(
            409, f"only the newest study of {study.project} ({newest.name}) can be resumed"
        )
    run = _launch(request, db, study.project, resume=True)
    run.study = study.name  # a resumed run announces no study of its own
    return run.describe()


def _launch(request: Request, db: StudyStore, project: str, resume: bool, **options: Any) -> Run:
    manager = runs(request)
    if project in manager.projects and manager.active(project) is None:
        _refuse_if_running_elsewhere(db, project)
    try:
        run = manager.start(project, resume=resume, **options)
    except KeyError:
        raise HTTPException(
            404, f"project {project!r} is not served (start hone serve with --project)"
        ) from None
    except HoneError as exc:
        raise HTTPException(409, str(exc)) from None
    return run


def _refuse_if_running_elsewhere(db: StudyStore, project: str) -> None:
    """A run of the project by another process (`hone tune` in a terminal) holds its journal's
    lock: a second run started here would be answered 202 and only then fail on that lock."""
    newest = find(db, project)
    if newest is None or newest.state != RUNNING:
        return
    pid = newest.attrs.get("pid")
    if process_alive(newest.attrs):
        raise HTTPException(
            409, f"study {newest.name} is running in another process (pid {pid}); stop it first"
        )


@router.post("/studies/{name:path}/stop", dependencies=NO_BODY)
def stop_study(name: str, request: Request, db: StudyStore = Store) -> dict[str, Any]:
    """Stop a run this server started, as Ctrl-C stops `hone tune`: knobs back, study
    interrupted. A run started elsewhere is left alone (a recorded pid may since belong to
    another process), and so is a run of another study of the same project."""
    study = find_study(db, name)
    manager = runs(request)
    run = manager.active(study.project)
    if run is None:
        pid = study.attrs.get("pid")
        where = ""
        if study.state == RUNNING:  # a pid that is gone is not a run 'elsewhere': say so
            where = (
                f" (pid {pid} elsewhere)"
                if process_alive(study.attrs) is not False
                else f"; its process (pid {pid}) is gone: resume it"
            )
        raise HTTPException(409, f"study {study.name} is not running under this server{where}")
    running = run.study or find_study(db, study.project).name  # a run works on the newest
    if running != study.name:
        raise HTTPException(409, f"study {study.name} is not running here; {running} is")
    manager.stop(study.project)
    return {"stopped": study.name, "pid": run.process.pid, "returncode": run.process.poll()}


@router.post("/projects/{project:path}/restore", dependencies=NO_BODY)
def restore_project(project: str, request: Request, db: StudyStore = Store) -> dict[str, Any]:
    """Put back every knob a run of this project changed (`hone restore`)."""
    known = {s.project for s in db.studies()} | set(runs(request).projects)
    if project not in known:
        raise HTTPException(404, f"no study or served project named {project!r}")
    if runs(request).active(project) is not None:
        raise HTTPException(409, f"a run of {project} is going; stop it first")
    from hone import children
    from hone.cluster.restore import restore_project as restore_everywhere

    # what a killed run left running goes first, as for `hone restore`: a set command still
    # running would write its trial value after the original is back
    stopped = children.stop_orphans()
    try:  # this machine's journal, and every host's of a cluster project
        outcomes = restore_everywhere(project)
    except HoneError as exc:
        raise HTTPException(409, str(exc)) from None
    return {
        "project": project,
        "stopped": stopped,
        "restored": [
            # host None: this machine (every item has every key: a stable shape)
            {
                "name": o.outcome.name,
                "value": o.outcome.value,
                "error": o.outcome.error,
                "changed": o.outcome.changed,
                "kept": o.outcome.kept,
                "host": o.host or None,
            }
            for o in outcomes
        ],
        "ok": all(o.outcome.ok for o in outcomes),
    }


@router.get("/studies/{name:path}/events")
async def study_events(
    name: str,
    request: Request,
    db: StudyStore = Store,
    after: int = Query(0, ge=0, le=2**31 - 1),
) -> StreamingResponse:
    """Server-sent events while the study runs: `trial` (a new or finished trial from the
    database, whoever runs the study), `progress` (the run's reporter events, when this server
    started it) and `state`. `after`: the caller holds every trial numbered below it, finished
    (a page that has just read /trials); those are not sent again, since a finished trial does
    not change. Without it every trial comes first: 4 MB for 10,000 trials."""
    study = await asyncio.to_thread(find_study, db, name)
    events = request.app.state.events
    interval = request.app.state.poll_interval

    async def stream() -> AsyncIterator[str]:
        seen: dict[int, str] | None = None
        fingerprint: tuple | None = None
        state = None
        seq = events.last_seq()
        quiet = time.monotonic()
        yield "retry: 2000\n\n"
        while not await request.is_disconnected():
            current = await asyncio.to_thread(_fingerprint, db, study.study_id)
            if current != fingerprint:
                fingerprint = current
                trials = await asyncio.to_thread(read_trials, db, study)
                if seen is None:
                    seen = {t.number: t.state for t in trials if t.number < after and _done(t)}
                for trial in trials:
                    if seen.get(trial.number) != trial.state:
                        seen[trial.number] = trial.state
                        yield _sse("trial", trial_dict(trial))
                fresh = await asyncio.to_thread(find_study, db, study.name)
                if fresh.state != state:
                    state = fresh.state
                    yield _sse("state", {"state": state, "result": fresh.attrs.get("result")})
            for number, event in events.since(f"project:{study.project}", seq):
                seq = number
                yield _sse("progress", event)
            if time.monotonic() - quiet > 15:
                quiet = time.monotonic()
                yield ": keep-alive\n\n"
            await asyncio.sleep(interval)

    return StreamingResponse(stream(), media_type="text/event-stream", headers=_NO_CACHE)


# `{name:path}`: A-Tune project names may hold a '/', which a client sends as %2F and the
# server decodes before routing. Registered after the routes above, whose paths it would
# otherwise swallow (`/studies/x/trials` would be the study `x/trials`).
@router.get("/studies/{name:path}")
def get_study(name: str, db: StudyStore = Store) -> dict[str, Any]:
    study = find_study(db, name)
    return detail(db, study)


_NO_CACHE = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}


def _done(trial: TrialRecord) -> bool:
    """Finished (complete, failed, pruned): its stored state will not change again."""
    return trial.state not in ("running", "waiting")


def _fingerprint(db: StudyStore, study_id: int) -> tuple:
    """Changes whenever a trial is added or finishes, or the study's state changes."""
    t = models.TrialModel.__table__
    ua = models.StudyUserAttributeModel.__table__
    with db.storage.engine.connect() as conn:
        trials = conn.execute(
            sa.select(sa.func.count(), sa.func.count(t.c.datetime_complete)).where(
                t.c.study_id == study_id
            )
        ).one()
        state = conn.execute(
            sa.select(ua.c.value_json).where(ua.c.study_id == study_id, ua.c.key == "state")
        ).scalar()
    return (*trials, state)


def _sse(kind: str, data: Any) -> str:
    """One event; a non-finite number is null (json.dumps would write NaN, which the browser's
    JSON.parse refuses, and the live view would stop)."""
    return f"event: {kind}\ndata: {json.dumps(finite(data), default=str)}\n\n"
