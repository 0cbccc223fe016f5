"""Where hone keeps its state: journals, the study database, reports."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

#: A project name that is a folder name as it stands (hone.yaml's rule for `name`).
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


def state_dir() -> Path:
    """HONE_HOME, else /var/lib/hone for root, else ~/.local/state/hone. Made private (0700):
    it holds trial data, diagnosed command lines and the server's token."""
    env = os.environ.get("HONE_HOME")
    if env:
        path = Path(env)
    elif os.geteuid() == 0:
        path = Path("/var/lib/hone")
    else:
        path = Path.home() / ".local" / "state" / "hone"
    if not path.is_dir():
        path.mkdir(parents=True, mode=0o700)
        path.chmod(0o700)  # mkdir's mode is filtered by the umask
    return path


def default_storage_url() -> str:
    database = state_dir() / "studies.db"
    if not database.exists():  # SQLite's own files (-wal, -shm) take the database's mode
        os.close(os.open(database, os.O_WRONLY | os.O_CREAT, 0o600))
    return f"sqlite:///{database}"


def work_dir(project: str) -> Path:
    """A project's private folder for its data (HONE_WORKDIR), inside the state directory
    whatever the name: an A-Tune project may be named `../../etc` or `/`, which as a path
    would lead out of it. Such a name is spelt safely (`safe_name`)."""
    return (
        state_dir() / "work" / (project if _PLAIN_NAME.fullmatch(project) else safe_name(project))
    )


def safe_name(name: str) -> str:
    """Any name as a file name: its letters, digits, `_` and `-`, and a digest of the exact name
    that keeps apart two that differ only in other characters (`dup` and `dup.`)."""
    safe = re.sub(r"[^A-Za-z0-9_-]+", "_", name)[:60]
    return f"{safe}.{hashlib.sha256(name.encode()).hexdigest()[:12]}"
