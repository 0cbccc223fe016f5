"""Where hone keeps its state: journals, the study database, reports."""

from __future__ import annotations

import os
from pathlib import Path


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
