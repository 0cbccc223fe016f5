"""The temporary folders of a diagnosis (`$TMPDIR/hone-diagnose-*`: perf's scheduler, lock and
system-call recordings, a `--system` run's perf.data), and their removal when the hone that
made one is gone.

Each diagnosis removes its own folder as it ends, a Ctrl-C or SIGTERM included; after a
SIGKILL (the OOM killer, `kill -9`, a CI job's hard stop) nothing runs in hone, and the folder,
hundreds of megabytes of scheduler events for a busy server, stayed. So each folder holds an
OWNER file, written before anything else: the pid of the hone that made it, that process's start
time (ticks since boot, /proc/PID/stat field 22) and the boot's id. Each recording diagnosis,
and whatever makes a folder, first removes those whose owner has ended: no process of that pid
runs, or one that started at another time (the pid was reused), or the machine has booted
since. A folder without a readable OWNER is not removed: another program's, or one whose owner
is still writing it; nor is one of another user or a symbolic link."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

PREFIX = "hone-diagnose-"
OWNER = "owner.json"
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def boot() -> str:
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return ""


def started(pid: int) -> int | None:
    """The process's start time in ticks since boot, None when no such process runs."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text(errors="replace")
        return int(stat_line.rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def owner() -> dict[str, object]:
    """This process as a folder's owner."""
    return {"pid": os.getpid(), "start": started(os.getpid()), "boot": boot()}


def ended(owned: dict[str, object]) -> bool:
    """Whether the process an OWNER names is gone (its pid free or reused, or another boot)."""
    pid = owned.get("pid")
    if not isinstance(pid, int) or owned.get("boot") != boot():
        return True
    return started(pid) != owned.get("start")


def read_owner(folder: Path) -> dict[str, object] | None:
    """The OWNER file's fields, None when it is missing or unreadable."""
    try:
        owned = json.loads((folder / OWNER).read_text())
    except (OSError, ValueError):
        return None
    return owned if isinstance(owned, dict) else None


def write_owner(folder: Path, **more: object) -> None:
    """Name this process the folder's owner (with `more` fields), whole or not at all."""
    partial = folder / f".{OWNER}.new"
    partial.write_text(json.dumps({**owner(), **more}))
    partial.replace(folder / OWNER)


def make() -> Path:
    """A new temporary folder of this process's, once the folders of ended ones are gone."""
    sweep()
    folder = Path(tempfile.mkdtemp(prefix=PREFIX))
    write_owner(folder)
    return folder


def sweep(where: Path | None = None) -> list[Path]:
    """Remove the temporary folders (in `where`, else the temporary directory) whose owning
    hone has ended; returns them."""
    removed = []
    base = where or Path(tempfile.gettempdir())
    with contextlib.suppress(OSError):
        for folder in base.glob(f"{PREFIX}*"):
            try:
                info = folder.lstat()
            except OSError:  # removed meanwhile
                continue
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
                continue
            owned = read_owner(folder)
            if owned is not None and ended(owned):
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
    return removed
