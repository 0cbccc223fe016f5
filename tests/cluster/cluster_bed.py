"""What the cluster tests share besides fixtures: the hosts' starting file and the project."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable

from benchmarks.cluster.netns import Testbed

CONFIG = "threads = 4\nbatch = 100\n# kept as it is\n"


def project_yaml(bed: Testbed, benchmark: str = "echo score: 1") -> str:
    """Three knobs on the group `brokers` (all three hosts); the benchmark on h1."""
    conf = bed.mount / "app.conf"
    return (
        "name: fanout\n" + bed.hosts_yaml({"brokers": [0, 1, 2]}) + "knobs:\n"
        "  backlog: {type: int, range: [128, 1024], sysctl: net.core.somaxconn, group: brokers}\n"
        f"  threads: {{type: int, range: [1, 16], config: {{file: {conf}, key: threads}},"
        " group: brokers}\n"
        f"  batch: {{type: int, range: [10, 1000], config: {{file: {conf}, key: batch}},"
        " group: brokers}\n"
        f"benchmark: {{command: '{benchmark}', host: h1}}\n"
        "metrics:\n  score: {pattern: 'score: (\\d+)', direction: maximize}\n"
        "tuning: {engine: random, budget: 3, baseline: 1, seed: 1, apply: never}\n"
    )


def kill_9_once(
    proc: subprocess.Popen, reached: Callable[[], bool], seconds: float, why: str
) -> None:
    """Wait until `reached()` (a trial's value is on the hosts), then kill -9 the controller."""
    try:
        deadline = time.monotonic() + seconds
        while not reached():
            assert proc.poll() is None, proc.stdout.read().decode()[-2000:]  # type: ignore[union-attr]
            assert time.monotonic() < deadline, why
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
