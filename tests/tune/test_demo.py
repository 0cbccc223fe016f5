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
    # short runs (one baseline reading, no profile of the winner): the checkout and the
    # starting settings are under test, not the study
    argv = ["--budget", "3", "--baseline", "1", "--apply", "always", "--no-why"]
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
    store = StudyStore()
    first, second = (
        [t.config for t in store.trials(store.find(name)) if t.phase == "baseline"]
        for name in ("compress#1", "compress#2")
    )
    assert first and first == second  # the second demo started where the first did
    assert (hone_home / "demo" / "compress" / "settings.conf").exists()
