"""What every hone process on this machine shares, whatever its HONE_HOME: one folder holding
the lock of each setting being changed (`locks/`) and a durable record of each setting whose
original a journal holds (`left/`). Without `left/`, a run from another HONE_HOME would journal
a value a killed run left behind as its own "original", and restore to it."""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import shlex
import stat
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hone.errors import HoneError

ENV = "HONE_SETTINGS_DIR"
#: What a record says of each scope that holds a setting's original, beside its restore.
FIELDS = ("home", "scope", "journal", "label")


@dataclass(frozen=True)
class Owner:
    """Who journals a setting's original: one scope (a project, the profiles) of one HONE_HOME."""

    home: str
    #: The journal's path less its host part: a project's journals on every host are one scope.
    scope: str
    journal: str
    label: str  # "project crash-test", in messages
    restore: tuple[str, ...]  # the command that puts the scope's settings back

    def command(self) -> str:
        return f"HONE_HOME={shlex.quote(self.home)} {shlex.join(self.restore)}"


def location() -> Path:
    """HONE_SETTINGS_DIR, else /var/lib/hone-settings for root, else the user's own (a user
    other than root can change only what that user may write)."""
    env = os.environ.get(ENV)
    if env:
        return Path(env).absolute()
    if os.geteuid() == 0:
        return Path("/var/lib/hone-settings")
    return Path.home() / ".local" / "state" / "hone-settings"


def folder(name: str) -> Path:
    """`locks` or `left` in the machine's folder, made private; refused in one line when it
    cannot be made or another user could write it: hone changes nothing unguarded."""
    base = location()
    why = None
    try:
        for path in (base, base / name):
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
            info = path.lstat()
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
                why = f"{path} is not a folder of this user's"
            elif info.st_mode & 0o022:
                why = f"other users can write {path}"
            if why is not None:
                break
    except OSError as exc:
        why = exc.strerror or str(exc)
    if why is not None:
        raise HoneError(
            f"cannot use {base}, where every hone on this machine records the settings it"
            f" changes ({why}); set {ENV} to a folder of this user's that no one else can write"
        )
    return base / name


def file_of(setting: str, kind: str) -> Path:
    digest = hashlib.sha256(setting.encode()).hexdigest()[:24]
    return folder(kind) / f"{digest}.{'lock' if kind == 'locks' else 'json'}"


def refuse_left(setting: str, owner: Owner) -> list[Owner]:
    """Refuse a setting whose original another HONE_HOME's journal holds (a run of it died, or
    applied a winner or a profile): its value now is that home's, not the original. Returns
    the scopes of this home that hold it: within one home, scopes stack as a user stacks them
    (a project tuned on top of an applied profile journals the profile's value and restores
    it)."""
    held = holders(setting)
    if not held or held[0].home == owner.home:
        return held
    labels = " on ".join(dict.fromkeys(o.label for o in reversed(held)))  # hosts: one scope
    live = [o for o in held if os.path.exists(o.journal)]
    if not live:
        gone = ", ".join(o.journal for o in held)
        raise HoneError(
            f"{setting} is recorded as changed by hone in HONE_HOME={held[0].home} ({labels}),"
            f" whose journal is gone ({gone}), so no restore can put it back: set it as it"
            f" should be, then release it with: rm {shlex.quote(str(file_of(setting, 'left')))}"
        )
    raise HoneError(
        f"{setting} was changed by hone in HONE_HOME={held[0].home} ({labels}) and not put"
        " back (its journal holds the original: a run killed, or a winner or profile applied);"
        f" put it back first: {restore_command(live)}"
    )


def holders(setting: str) -> list[Owner]:
    """The scopes whose journals hold a setting's original, all of one HONE_HOME, in the order
    they journaled it; refused in one line when its record cannot be read."""
    path = file_of(setting, "left")
    try:
        return _holders(json.loads(path.read_text()))
    except FileNotFoundError:
        return []
    except (OSError, ValueError, TypeError, KeyError):
        raise HoneError(
            f"{setting}: the record of who left it changed, {path}, cannot be read; if no hone"
            f" run left it changed, release it with: rm {shlex.quote(str(path))}"
        ) from None


def restore_command(owners: list[Owner]) -> str:
    """The commands that put a setting back, the last stacked scope first: each restores the
    value the scope under it had left, the first the original."""
    return " && ".join(dict.fromkeys(o.command() for o in reversed(owners)))


def claim(settings: Iterable[str], owner: Owner) -> None:
    """Record durably, before the journal records their originals, that this scope holds them
    (after the scopes of this home that hold them already)."""
    with _locked() as left:
        written = False
        for setting in settings:
            held = refuse_left(setting, owner)
            if all(o.journal != owner.journal for o in held):
                _write(file_of(setting, "left"), setting, [*held, owner])
                written = True
        if written:
            fsync_dir(left)


def record_missing(found: Mapping[str, list[tuple[float, Owner]]]) -> None:
    """Add to each setting's record the journals of one home that hold its original (with the
    time they journaled it) and that it does not name: journals written before these records
    existed. A setting another HONE_HOME's record holds is that home's to guard; a journal
    archived meanwhile holds nothing."""
    with _locked() as left:
        written = False
        for setting, journals in found.items():
            try:
                held = holders(setting)
            except HoneError:
                continue  # named to whoever changes the setting
            if held and held[0].home != journals[0][1].home:
                continue
            named = {o.journal for o in held}
            missing = [
                o for _, o in journals if o.journal not in named and os.path.exists(o.journal)
            ]
            if missing:
                when = {o.journal: t for t, o in journals}
                stacked = sorted([*held, *missing], key=lambda o: when.get(o.journal, math.inf))
                _write(file_of(setting, "left"), setting, stacked)
                written = True
        if written:
            fsync_dir(left)


def release(journal: str) -> None:
    """Take a journal whose originals are all back (it was archived) out of the records; a
    record that names no other journal is removed."""
    if not (location() / "left").is_dir():
        return
    with _locked() as left:
        changed = False
        for path in left.glob("*.json"):
            try:
                record = json.loads(path.read_text())
                setting, held = str(record["setting"]), _holders(record)
            except (OSError, ValueError, TypeError, KeyError):
                continue  # unreadable: named when a run meets it
            kept = [o for o in held if o.journal != journal]
            if len(kept) == len(held):
                continue
            if kept:
                _write(path, setting, kept)
            else:
                path.unlink()
            changed = True
        if changed:
            fsync_dir(left)


def _holders(record: Any) -> list[Owner]:
    return [
        Owner(**{k: str(h[k]) for k in FIELDS}, restore=tuple(map(str, h["restore"])))
        for h in record["holders"]
    ]


def _write(path: Path, setting: str, held: list[Owner]) -> None:
    """Replace a setting's record whole: a temporary file, fsynced, renamed over it (the
    caller fsyncs the folder once)."""
    record = {
        "setting": setting,
        "holders": [asdict(o) for o in held],
        "pid": os.getpid(),
        "time": time.time(),
    }
    temporary = path.with_suffix(".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, json.dumps(record, sort_keys=True).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    temporary.rename(path)


@contextmanager
def _locked() -> Iterator[Path]:
    """The `left` folder, locked while records are read and rewritten: two processes adding
    and removing a scope of one setting would otherwise each write the list without the
    other's change."""
    left = folder("left")
    fd = os.open(left, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield left
    finally:
        os.close(fd)


def fsync_dir(directory: Path) -> None:
    """Make a folder's new or removed names durable (a file's fsync does not)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
