"""Request dependencies: access checks and the objects every route shares."""

from __future__ import annotations

from fastapi import HTTPException, Request

from hone.serve.auth import Access
from hone.serve.summary import find
from hone.storage import StudyRecord, StudyStore


def read_access(request: Request) -> None:
    access: Access = request.app.state.access
    access.check(request, write=False)


def write_access(request: Request) -> None:
    access: Access = request.app.state.access
    access.check(request, write=True)


def store(request: Request) -> StudyStore:
    return request.app.state.store


def find_study(store: StudyStore, name: str) -> StudyRecord:
    """The study with exactly this name (`project#n`), or the newest of a project."""
    study = find(store, name)
    if study is None:
        raise HTTPException(404, f"no study named {name!r}")
    return study
