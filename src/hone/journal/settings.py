"""One process at a time per setting. Two projects (or a project and a profile) changing one
sysctl or file at once would each journal the other's trial value as the "original" and both
report everything put back while the setting stays changed. Each setting an operation touches
is locked for as long as it runs; the locks are re-entrant within a process (a run restores
under its own locks)."""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from hone.errors import HoneError
from hone.knobs import Actuator
from hone.paths import state_dir

_held: dict[str, list[int]] = {}  # setting -> [fd, depth]


@contextmanager
def settings_locked(actuators: Iterable[Actuator]) -> Iterator[None]:
    """Hold the lock of every setting these actuators change, taken in a fixed order."""
    names = sorted({name for a in actuators if (name := a.setting())})
    taken: list[str] = []
    try:
        for name in names:
            _acquire(name)
            taken.append(name)
        yield
    finally:
        for name in reversed(taken):
            _release(name)


def _acquire(name: str) -> None:
    if name in _held:
        _held[name][1] += 1
        return
    folder = state_dir() / "locks"
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / (hashlib.sha256(name.encode()).hexdigest()[:24] + ".lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 64, 0).decode(errors="replace").strip()
        os.close(fd)
        raise HoneError(
            f"{name} is being changed by another hone process ({holder or 'pid ?'}); wait for it"
            " or stop it first"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()}\n".encode(), 0)
    _held[name] = [fd, 1]


def _release(name: str) -> None:
    entry = _held[name]
    entry[1] -= 1
    if entry[1] == 0:
        os.close(entry[0])  # closing releases the lock
        del _held[name]
