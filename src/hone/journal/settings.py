"""One process at a time per setting, machine-wide. Two hone setups (two HONE_HOMEs, or a project
and a profile) changing one sysctl or file at once would each journal the other's trial value as
the "original" and both report everything put back while the setting stays changed. Each setting
an operation touches is locked, in the folder every hone on the machine shares
(`hone.journal.machine`), for as long as it runs; the locks are re-entrant within a process (a
run restores under its own locks)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from hone.errors import HoneError
from hone.journal.machine import Owner, file_of, refuse_left
from hone.knobs import Actuator

_held: dict[str, list[int]] = {}  # setting -> [fd, depth]


@contextmanager
def settings_locked(
    actuators: Iterable[Actuator], owner: Owner, restoring: bool = False
) -> Iterator[None]:
    """Hold the lock of every setting these actuators change, taken in a fixed order; unless
    `restoring` (the owner's own originals go back), refuse one whose original another
    HONE_HOME's journal holds."""
    names = sorted({name for a in actuators if (name := a.setting())})
    taken: list[str] = []
    try:
        for name in names:
            _acquire(name, owner)
            taken.append(name)
        if not restoring:
            for name in names:
                refuse_left(name, owner)
        yield
    finally:
        for name in reversed(taken):
            _release(name)


def _acquire(name: str, owner: Owner) -> None:
    if name in _held:
        _held[name][1] += 1
        return
    fd = os.open(file_of(name, "locks"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 4096, 0).decode(errors="replace").strip()
        os.close(fd)
        raise HoneError(
            f"{name} is being changed by another hone process ({holder or 'pid ?'}); wait for it"
            " or stop it first"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()}, HONE_HOME={owner.home}, {owner.label}\n".encode(), 0)
    _held[name] = [fd, 1]


def _release(name: str) -> None:
    entry = _held[name]
    entry[1] -= 1
    if entry[1] == 0:
        os.close(entry[0])  # closing releases the lock
        del _held[name]
