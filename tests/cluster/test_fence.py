"""A write of a dead controller that lands after `hone restore` must not leave a trial's value:
each run claims the hosts with a token, its writes check it under a lock on the host, and a
restore takes the hosts over (docs/cluster.md)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from cluster_bed import kill_9_once

from benchmarks.cluster.netns import Testbed
from hone.cluster.fence import Fence, lock_file
from hone.cluster.project import cluster_of
from hone.cluster.restore import restore_project
from hone.errors import ActuationError
from hone.project import load_project


def slow_project(tmp_path: Path, bed: Testbed) -> Path:
    """One shell knob on h1 whose set command, for any value but the original `a`, marks that
    it began and then waits for the test to open a gate: a write held in flight."""
    mnt = bed.mount
    set_command = (
        f'[ "$value" = a ] || {{ touch {mnt}/started; '
        f"until [ -e {mnt}/gate ]; do sleep 0.02; done; }}; "
        f'printf %s $value > {mnt}/slow.txt; [ "$value" = a ] || touch {mnt}/late'
    )
    path = tmp_path / "hone.yaml"
    path.write_text(
        "name: fence\n" + bed.hosts_yaml({"brokers": [0]}) + "knobs:\n"
        "  slow:\n"
        "    type: categorical\n"
        "    values: [a, b, c]\n"
        f"    shell: {{get: 'cat {mnt}/slow.txt', set: '{set_command}'}}\n"
        "    group: brokers\n"
        "benchmark: 'echo score: 1'\n"
        "metrics:\n  score: {pattern: 'score: (\\d+)', direction: maximize}\n"
        "tuning: {engine: random, budget: 3, baseline: 1, seed: 1, apply: never}\n"
    )
    return path


@pytest.fixture
def slow_host(bed: Testbed) -> Testbed:
    for name in ("started", "gate", "late"):
        (bed.data(0) / name).unlink(missing_ok=True)
    (bed.data(0) / "slow.txt").write_text("a")
    return bed


def waiting_on_the_lock() -> bool:
    """Whether a second flock waits on the project's lock of a host (the first holds it)."""
    pattern = f"flock .*{lock_file('fence')}"
    found = subprocess.run(["pgrep", "-f", "-c", pattern], capture_output=True)
    return int(found.stdout or b"0") >= 2


def test_a_write_in_flight_when_the_controller_dies_does_not_outlive_the_restore(
    tmp_path: Path, slow_host: Testbed, hone_home: Path
):
    """The trial's write is held on h1 while the controller is killed and `hone restore`
    runs; it lands only then. The restore must not be done before it: its original stays."""
    data = slow_host.data(0)
    env = {**os.environ, "HONE_HOME": str(hone_home)}
    hone = [sys.executable, "-m", "hone"]
    tune = subprocess.Popen(
        [*hone, "tune", str(slow_project(tmp_path, slow_host))],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    kill_9_once(tune, (data / "started").exists, 30, "no trial's write began on h1")
    restore = subprocess.Popen(
        [*hone, "restore", "fence"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + 60
        while restore.poll() is None and not waiting_on_the_lock():
            assert time.monotonic() < deadline, "the restore neither ended nor waited"
            time.sleep(0.02)
        (data / "gate").touch()  # the dead controller's write goes on
        said = restore.communicate(timeout=60)[0].decode()
    finally:
        if restore.poll() is None:
            restore.kill()
    assert restore.returncode == 0, said
    while not (data / "late").exists():  # it landed (a fenced write never waits for it)
        assert time.monotonic() < deadline, "the held write never landed"
        time.sleep(0.02)
    assert (data / "slow.txt").read_text() == "a", said


def test_a_run_taken_over_by_a_restore_writes_nothing_more(tmp_path: Path, slow_host: Testbed):
    """A write that reaches a host after a restore took it over (the first thing a restore
    does there) is refused on the host: the original stays."""
    cluster = cluster_of(load_project(slow_project(tmp_path, slow_host)))
    assert cluster is not None
    cluster.prepare()
    Fence("fence").take(cluster.hosts["h1"])
    with pytest.raises(ActuationError, match="took the host over"):
        cluster.apply({"slow": "c"})
    assert (slow_host.data(0) / "slow.txt").read_text() == "a"
    assert not (slow_host.data(0) / "started").exists()
    cluster.fence.take(cluster.hosts["h1"])  # the run claims it back: it writes again
    (slow_host.data(0) / "gate").touch()
    cluster.apply({"slow": "c"})
    assert (slow_host.data(0) / "slow.txt").read_text() == "c"
    assert all(o.outcome.ok for o in restore_project("fence"))
    assert (slow_host.data(0) / "slow.txt").read_text() == "a"


def test_a_write_that_finds_the_lock_held_too_long_is_refused_naming_it(
    tmp_path: Path, slow_host: Testbed, monkeypatch: pytest.MonkeyPatch
):
    """A second write of the project waits for the host's lock LOCK_WAIT_SECONDS, then gives up
    in one line naming the lock, not with flock's bare exit code; the first write goes on."""
    cluster = cluster_of(load_project(slow_project(tmp_path, slow_host)))
    assert cluster is not None
    cluster.prepare()
    held = threading.Thread(target=cluster.apply, args=({"slow": "b"},))
    held.start()
    try:
        deadline = time.monotonic() + 30
        while not (slow_host.data(0) / "started").exists():
            assert time.monotonic() < deadline, "the first write never began"
            time.sleep(0.02)
        monkeypatch.setattr("hone.cluster.ssh.LOCK_WAIT_SECONDS", 1)
        began = time.monotonic()
        with pytest.raises(ActuationError, match=r"stayed locked for 1 s.*still running"):
            cluster.hosts["h1"].run("true", lock=lock_file("fence"))
        assert time.monotonic() - began < 20
    finally:
        (slow_host.data(0) / "gate").touch()
        held.join(timeout=60)
    assert (slow_host.data(0) / "slow.txt").read_text() == "b"
    assert all(o.outcome.ok for o in restore_project("fence"))
