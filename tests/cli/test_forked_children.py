"""The tests' `hone` children forked from a helper that has imported hone (tests/forked_hone.py)
answer as `python -m hone` started afresh does: the same stdout, stderr and exit code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from forked_hone import SESSION_ENV, ForkedHone

ROOT = Path(__file__).resolve().parents[2]


def test_a_forked_command_answers_as_a_fresh_one(hone_home: Path) -> None:
    env = {**os.environ, "HONE_HOME": str(hone_home), "COLUMNS": "200"}
    helper = ForkedHone(SESSION_ENV)
    try:
        assert helper.fits(env)
        for args in (
            ["tune", "--help"],  # whole lines through a pipe
            ["check", "examples/compress", "--json"],
            ["show", "nope"],  # one line on stderr, exit code 2
        ):
            fresh = subprocess.run(
                [sys.executable, "-m", "hone", *args],
                capture_output=True, text=True, cwd=ROOT, env=env, timeout=60,
            )  # fmt: skip
            forked = helper.run(args, env=env, cwd=ROOT, timeout=60)
            assert forked.returncode == fresh.returncode, args
            assert (forked.stdout, forked.stderr) == (fresh.stdout, fresh.stderr), args
            assert forked.stdout or forked.stderr
        assert not helper.fits({**env, "LC_ALL": "C"})  # a locale Python starts in: afresh
    finally:
        helper.close()
