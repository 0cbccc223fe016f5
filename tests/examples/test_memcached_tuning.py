"""A short real tuning of memcached with a kernel knob and restart knobs (flags of the process
hone launches), applied, then `hone restore`: every value back, no server left running.

The example's workload, knobs, constraint and metric as they are; its benchmark runs 1 s instead
of 4 (a run takes 2.3 s: memcaslap's own start and end), one trial is searched and its
configuration confirmed in one round (the example: twenty, then two in three), without the
profiling of the winner (tests/tune/test_why.py checks that on a launched server). The server
is still launched again for each configuration it runs with: the baseline, the trial, then
each side of the round."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from hone.storage import StudyStore

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "memcached"
SOMAXCONN = Path("/proc/sys/net/core/somaxconn")


def memcached_pids() -> set[str]:
    result = subprocess.run(["pgrep", "-x", "memcached"], capture_output=True, text=True)
    return set(result.stdout.split())


@pytest.fixture
def somaxconn():
    original = SOMAXCONN.read_text()
    yield int(original)
    SOMAXCONN.write_text(original)


def shortened_example(folder: Path) -> Path:
    project = yaml.safe_load((EXAMPLE / "hone.yaml").read_text())
    command = project["benchmark"]["command"]
    assert " -t 4s" in command, command  # the example's run length, shortened here
    project["benchmark"]["command"] = command.replace(" -t 4s", " -t 1s")
    project["tuning"]["confirm"] = {"candidates": 1, "rounds": 1}
    (folder / "hone.yaml").write_text(yaml.safe_dump(project, sort_keys=False))
    return folder


def test_memcached_tune_apply_and_restore(hone_cli, somaxconn: int, tmp_path: Path) -> None:
    before = memcached_pids()
    result = hone_cli(
        "tune",
        str(shortened_example(tmp_path)),
        "--budget",
        "1",
        "--baseline",
        "1",
        "--apply",
        "always",
        "--seed",
        "1",
        "--no-why",
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
