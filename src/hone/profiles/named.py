"""Profiles by name: list, load, apply, check, and the user's own (define, update, undefine)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from hone.errors import HoneError
from hone.paths import state_dir
from hone.profiles.library import Profile, ProfileLibrary
from hone.profiles.transaction import (
    ApplyResult,
    Outcome,
    active_profile,
    apply_profile,
    check_profile,
)


@dataclass(frozen=True)
class ProfileInfo:
    name: str
    path: Path
    active: bool


def list_profiles() -> list[ProfileInfo]:
    active = active_profile()
    return [
        ProfileInfo(name, path, name == active)
        for name, path in sorted(ProfileLibrary().names().items())
    ]


def load(name: str) -> Profile:
    return ProfileLibrary().load(name)


def apply(name: str) -> ApplyResult:
    """Apply a profile by name (rolling back the active one first); all or nothing."""
    return apply_profile(load(name))


def check(name: str | None = None) -> list[Outcome]:
    """Compare the live system with a profile (default: the active one)."""
    name = name or active_profile()
    if not name:
        raise HoneError("no active profile: name one")
    return check_profile(load(name))


def _own(name: str) -> Path:
    if not name or "/" in name or name.startswith("."):
        raise HoneError(f"profile name {name!r} must not be empty or contain '/'")
    return state_dir() / "profiles" / f"{name}.conf"


def define(name: str, source: Path) -> Profile:
    """Add a profile of your own from an INI file; a broken file is refused now."""
    target = _own(name)
    if target.exists():
        raise HoneError(f"profile {name!r} exists: use `hone profile update`")
    return _install(name, source, target)


def update(name: str, source: Path) -> Profile:
    """Replace a profile of your own (the old file stays if the new one is broken)."""
    target = _own(name)
    if not target.exists():
        raise HoneError(f"no profile of your own named {name!r}")
    return _install(name, source, target)


def _install(name: str, source: Path, target: Path) -> Profile:
    if not source.is_file():
        raise HoneError("no such file", file=source)
    target.parent.mkdir(parents=True, exist_ok=True)
    staged = target.with_name(f".{target.name}.new")
    shutil.copyfile(source, staged)
    previous = target.read_bytes() if target.exists() else None
    staged.replace(target)
    try:
        profile = load(name)
        if not profile.items and not profile.includes:
            raise HoneError("no settings: a profile needs a [section] with `key = value` lines")
        return profile
    except HoneError as exc:
        if previous is None:
            target.unlink()
        else:
            target.write_bytes(previous)
        if exc.file not in (None, str(target)):  # an included profile's own error
            raise
        # the user gave `source`: the copy under hone's state is not theirs to look at
        raise HoneError(exc.message, file=source, line=exc.line, key=exc.key) from None


def undefine(name: str) -> None:
    """Remove a profile of your own (not while it is the active one)."""
    target = _own(name)
    if not target.exists():
        raise HoneError(f"no profile of your own named {name!r}")
    if active_profile() == name:
        raise HoneError(f"profile {name!r} is active: `hone profile rollback` first")
    target.unlink()
