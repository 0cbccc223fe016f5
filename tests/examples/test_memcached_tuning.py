"""A short real tuning of memcached with a kernel knob and restart knobs (flags of the process
hone launches), applied, then `hone restore`: every value back, no server left running."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hone.storage import StudyStore

ROOT = Path(__file__).resolve().parents[2]
SOMAXCONN = Path("/proc/sys/net/core/somaxconn")


def memcached_pids() -> set[str]:
    result = subprocess.run(["pgrep", "-x", "memcached"], capture_output=True, text=True)
    return set(result.stdout.split())


@pytest.fixture
def somaxconn():
    original = SOMAXCONN.read_text()
    yield int(original)
    SOMAXCONN.write_text(original)


def test_memcached_tune_apply_and_restore(hone_cli, somaxconn: int) -> None:
    before = memcached_pids()
    result = hone_cli(
        "tune",
        str(ROOT / "examples" / "memcached"),
        "--budget",
        "3",
        "--baseline",
        "1",
        "--apply",
        "always",
        "--seed",
        "1",
        timeout=240,
    )
    assert result.returncode == 0, result.stderr + result.stdout
    assert "applied" in result.stdout
    assert not memcached_pids() - before  # hone stopped the memcached it started

    store = StudyStore()
    study = store.find("memcached")
    trials = store.trials(study)
    done = [t for t in trials if t.state == "complete"]
    assert len(done) >= 3 and all(t.metrics["tps"] > 1000 for t in done)
    best = study.attrs["result"]["best"]
    assert int(SOMAXCONN.read_text()) == best["somaxconn"]

    restored = hone_cli("restore", "memcached")
    assert restored.returncode == 0, restored.stderr
    assert int(SOMAXCONN.read_text()) == somaxconn
