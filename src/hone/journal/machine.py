"""What every hone process on this machine shares, whatever its HONE_HOME: one folder holding
the lock of each setting being changed (`locks/`) and a durable record of each setting whose
original a journal holds (`left/`). Without `left/`, a run from another HONE_HOME would journal
a value a killed run left behind as its own "original", and restore to it."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import stat
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from hone.errors import HoneError

ENV = "HONE_SETTINGS_DIR"


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
    try:
        for path in (base, base / name):
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
            info = path.lstat()
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
                raise HoneError(f"{path} is not a folder of this user's")
            if info.st_mode & 0o022:
                raise HoneError(f"{path} can be written by other users")
    except OSError as exc:
        raise HoneError(
            f"cannot use {base}, where every hone on this machine records the settings it"
            f" changes ({exc.strerror}); set {ENV} to a folder it can write"
        ) from None
    return base / name


def file_of(setting: str, kind: str) -> Path:
    digest = hashlib.sha256(setting.encode()).hexdigest()[:24]
    return folder(kind) / f"{digest}.{'lock' if kind == 'locks' else 'json'}"


def refuse_left(setting: str, owner: Owner) -> None:
    """Refuse a setting whose original another scope's journal holds (a run of it died or
    applied a winner): its value now is that run's, not the original."""
    path = file_of(setting, "left")
    try:
        record = json.loads(path.read_text())
        fields = {k: str(record[k]) for k in ("home", "scope", "journal", "label")}
        other = Owner(**fields, restore=tuple(map(str, record["restore"])))
    except FileNotFoundError:
        return
    except (OSError, ValueError, TypeError, KeyError):
        raise HoneError(
            f"{setting}: the record of who left it changed, {path}, cannot be read; if no hone"
            f" run left it changed, release it with: rm {shlex.quote(str(path))}"
        ) from None
    if (other.home, other.scope) == (owner.home, owner.scope):
        return
    if not os.path.exists(other.journal):
        raise HoneError(
            f"{setting} is recorded as changed by hone in HONE_HOME={other.home} ({other.label}),"
            f" whose journal {other.journal} is gone, so no restore can put it back: set it as it"
            f" should be, then release it with: rm {shlex.quote(str(path))}"
        )
    raise HoneError(
        f"{setting} was changed by hone in HONE_HOME={other.home} ({other.label}) and not put"
        " back (its journal holds the original: a run killed, or a winner or profile applied);"
        f" put it back first: {other.command()}"
    )


def claim(settings: Iterable[str], owner: Owner) -> None:
    """Record durably, before the journal records their originals, that this scope holds them."""
    written = False
    for setting in settings:
        refuse_left(setting, owner)
        path = file_of(setting, "left")
        if path.exists():
            continue  # this scope's own record
        record = {"setting": setting, **asdict(owner), "pid": os.getpid(), "time": time.time()}
        temporary = path.with_suffix(".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, json.dumps(record, sort_keys=True).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        temporary.rename(path)
        written = True
    if written:
        _fsync_dir(path.parent)


def release(journal: str) -> None:
    """Remove the records of a journal whose originals are all back (it was archived)."""
    left = location() / "left"
    if not left.is_dir():
        return
    removed = False
    for path in left.glob("*.json"):
        try:
            if json.loads(path.read_text()).get("journal") == journal:
                path.unlink()
                removed = True
        except (OSError, ValueError, AttributeError):
            continue  # another's, or unreadable: named when a run meets it
    if removed:
        _fsync_dir(left)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
