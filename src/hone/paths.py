"""Where hone keeps its state: journals, the study database, reports."""

from __future__ import annotations

import os
from pathlib import Path


def state_dir() -> Path:
    """HONE_HOME, else /var/lib/hone for root, else ~/.local/state/hone."""
    env = os.environ.get("HONE_HOME")
    if env:
        path = Path(env)
    elif os.geteuid() == 0:
        path = Path("/var/lib/hone")
    else:
        path = Path.home() / ".local" / "state" / "hone"
    path.mkdir(parents=True, exist_ok=True)
    return path


def default_storage_url() -> str:
    return f"sqlite:///{state_dir() / 'studies.db'}"
