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


def refuse_left(setting: str, owner: Owner) -> Owner | None:
    """Refuse a setting whose original another HONE_HOME's journal holds (a run of it died, or
    applied a winner or a profile): its value now is that home's, not the original. Returns
    the record when it is this home's: within one home, scopes stack as a user stacks them (a
    project tuned on top of an applied profile journals the profile's value and restores it)."""
    path = file_of(setting, "left")
    try:
        record = json.loads(path.read_text())
        fields = {k: str(record[k]) for k in ("home", "scope", "journal", "label")}
        other = Owner(**fields, restore=tuple(map(str, record["restore"])))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, KeyError):
        raise HoneError(
            f"{setting}: the record of who left it changed, {path}, cannot be read; if no hone"
            f" run left it changed, release it with: rm {shlex.quote(str(path))}"
        ) from None
    if other.home == owner.home:
        return other
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
    written: Path | None = None
    for setting in settings:
        if refuse_left(setting, owner) is not None:
            continue  # recorded already, by this scope or one under it in this home
        path = file_of(setting, "left")
        record = {"setting": setting, **asdict(owner), "pid": os.getpid(), "time": time.time()}
        temporary = path.with_suffix(".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, json.dumps(record, sort_keys=True).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        written = temporary.rename(path)
    if written is not None:
        fsync_dir(written.parent)


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
        fsync_dir(left)


def fsync_dir(directory: Path) -> None:
    """Make a folder's new or removed names durable (a file's fsync does not)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
