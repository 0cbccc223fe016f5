"""Request dependencies: access checks and the objects every route shares."""

from __future__ import annotations

from fastapi import HTTPException, Request

from hone.serve.auth import Access
from hone.storage import StudyRecord, StudyStore
from hone.storage.summary import find

#: Methods that only read; every other method changes something and always needs the token.
READS = frozenset({"GET", "HEAD"})


def access_policy(request: Request) -> None:
    """The one access check, applied by the app to every API router (never per route, so a new
    route cannot be added without it): reads need the token unless reads are open, writes
    always do."""
    access: Access = request.app.state.access
    access.check(request, write=request.method not in READS)


def store(request: Request) -> StudyStore:
    return request.app.state.store


def find_study(store: StudyStore, name: str) -> StudyRecord:
    """The study with exactly this name (`project#n`), or the newest of a project."""
    study = find(store, name)
    if study is None:
        raise HTTPException(404, f"no study named {name!r}")
    return study
