"""`hone tune` and `hone worker` flags hold the ranges hone.yaml's `tuning:` holds: a budget
of 0 used to mean the project's 20 trials, -1 no search, and a negative seed a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROJECT = str(ROOT / "examples" / "compress")


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--budget", "0"), ("--budget", "-1"), ("--baseline", "0"), ("--seed", "-1")],
)
def test_tune_refuses_a_flag_out_of_range(flag: str, value: str, hone_run) -> None:
    line = hone_run("tune", PROJECT, flag, value, "--apply", "never").one_line()
    assert line.startswith(f"hone: tune: Invalid value for '{flag}'")


@pytest.mark.parametrize("lease", ["0", "0.1", "1e12"])
def test_worker_refuses_a_lease_out_of_range(tmp_path: Path, hone_run, lease: str) -> None:
    """Under a second a live worker's trials go stale between its heartbeats; past a day the
    heartbeat thread's timer overflows and the worker never beats at all."""
    storage = f"sqlite:///{tmp_path / 'shared.db'}"
    line = hone_run("worker", PROJECT, "--storage", storage, "--lease", lease).one_line()
    assert f"--lease must be between 1 and 86400 seconds, not {float(lease):g}" in line
    assert not (tmp_path / "shared.db").exists()
