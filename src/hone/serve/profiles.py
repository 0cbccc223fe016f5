"""Static profiles (`hone.profiles`): list, info, the active one checked item by item, apply
and roll back. Names are looked up in the profile library, never opened as paths."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException

from hone import profiles
from hone.errors import HoneError
from hone.serve.deps import NO_BODY

router = APIRouter(prefix="/api/profiles", tags=["profiles"])


def _item(item: profiles.Item) -> dict[str, Any]:
    return {"section": item.section, "key": item.key, "value": item.value, "source": item.source}


def _outcome(outcome: profiles.Outcome) -> dict[str, Any]:
    return {**_item(outcome.item), "status": outcome.status, "detail": outcome.detail}


def _load(name: str) -> profiles.Profile:
    if name not in profiles.ProfileLibrary().names():
        raise HTTPException(404, f"no profile named {name!r}")
    try:
        return profiles.load(name)
    except HoneError as exc:
        raise HTTPException(422, str(exc)) from None


@router.get("")
def list_all() -> list[dict[str, Any]]:
    return [{"name": p.name, "active": p.active} for p in profiles.list_profiles()]


@router.get("/active")
def active() -> dict[str, Any]:
    """The active profile and how the live system compares with each of its items (`error`:
    why they could not be checked; always present, null when they were)."""
    name = profiles.active_profile()
    if not name:
        return {"name": None, "items": [], "error": None}
    try:
        outcomes = profiles.check(name)
    except HoneError as exc:
        return {"name": name, "items": [], "error": str(exc)}
    return {"name": name, "items": [_outcome(o) for o in outcomes], "error": None}


@router.get("/{name}")
def info(name: str) -> dict[str, Any]:
    profile = _load(name)
    return {
        "name": profile.name,
        "includes": profile.includes,
        "items": [_item(i) for i in profile.items],
        "placeholders": {
            key: {"value": value, "how": how} for key, (value, how) in profile.placeholders.items()
        },
        "active": profiles.active_profile() == profile.name,
    }


@router.post("/{name}/apply", dependencies=NO_BODY)
def apply(name: str) -> dict[str, Any]:
    """Apply a profile as a transaction (the active one is rolled back first)."""
    profile = _load(name)
    try:
        result = profiles.apply_profile(profile)
    except HoneError as exc:
        raise HTTPException(409, str(exc)) from None
    return {
        "profile": result.profile,
        "previous": result.previous,
        "changed": result.changed,
        "items": [_outcome(o) for o in result.outcomes],
    }


@router.post("/rollback", dependencies=NO_BODY)
def rollback() -> dict[str, Any]:
    """Put back every value the active profile changed."""
    name = profiles.active_profile()
    try:
        restored = profiles.rollback()
    except HoneError as exc:
        raise HTTPException(409, str(exc)) from None
    return {"profile": name, "restored": restored}
