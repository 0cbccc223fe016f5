"""A hone killed exactly between starting a tracked program and writing its record: the gap
that the gate of shell.start_tracked closes, shared by the set-command and the server tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

#: Where hone would write the record (`children.add`), the process SIGKILLs itself instead.
_DIE_AT_THE_RECORD = (
    "import os, signal\n"
    "from hone import children\n"
    "children.add = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)\n"
)


def run_and_die_at_the_record(code: str, hone_home: Path, *args: str) -> None:
    """Run Python `code` (with `args` as sys.argv[1:]) until it records a started program."""
    done = subprocess.run(
        [sys.executable, "-c", _DIE_AT_THE_RECORD + code, *args],
        env={**os.environ, "HONE_HOME": str(hone_home)},
        check=False,
    )
    assert done.returncode == -signal.SIGKILL
