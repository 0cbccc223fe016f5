"""Request dependencies: access checks and the objects every route shares."""

from __future__ import annotations

import json

from fastapi import Depends, HTTPException, Request

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


async def no_body(request: Request) -> None:
    """Routes that act on their path alone refuse a body instead of ignoring it: a field sent
    by mistake (`{"force": true}`) would otherwise look accepted. No body, `{}` and `null` are
    no body (the UI and `hone remote` send `{}`)."""
    raw = await request.body()
    try:
        sent = json.loads(raw) if raw.strip() else None
    except ValueError:  # (UnicodeDecodeError is one)
        raise HTTPException(400, "the body is not JSON; this request takes none") from None
    if sent in (None, {}):
        return
    what = f"fields {', '.join(map(repr, sent))}" if isinstance(sent, dict) else "a body"
    raise HTTPException(422, f"this request takes no body; it was sent {what}")


#: `dependencies=NO_BODY` on a write route that takes none.
NO_BODY = [Depends(no_body)]
