"""`make run`'s demo works on a copy under hone's state directory: the checkout stays clean and a
second run starts from the same settings as the first."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from hone.storage import StudyStore

ROOT = Path(__file__).resolve().parents[2]


def test_the_demo_twice_leaves_the_checkout_clean_and_starts_alike(hone_home: Path) -> None:
    example = ROOT / "examples" / "compress" / "settings.conf"
    before = example.read_bytes()
    env = {**os.environ, "HONE_HOME": str(hone_home)}
    # short runs (one baseline reading, one trial, three confirmation rounds at most, no
    # profile of the winner): the checkout and the starting settings are under test, not the
    # study. Seed 1's trial is bz2 (compresses 4:1, faster than the default lzma): a winner
    # applied to the copy, which the second demo must not start from.
    argv = ["--budget", "1", "--baseline", "1", "--seed", "1", "--max-repeats", "3"]
    argv += ["--apply", "always", "--no-why"]
    copy = hone_home / "demo" / "compress" / "settings.conf"
    for _ in range(2):
        result = subprocess.run(
            ["bash", str(ROOT / "scripts" / "demo"), *argv],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert result.returncode == 0, result.stderr
        assert example.read_bytes() == before
        assert copy.read_bytes() != before and "method = bz2" in copy.read_text()
    store = StudyStore()
    first, second = (
        [t.config for t in store.trials(store.find(name)) if t.phase == "baseline"]
        for name in ("compress#1", "compress#2")
    )
    assert first and first == second  # the second demo started where the first did
