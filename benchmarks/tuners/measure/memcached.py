"""Measure a grid of memcached settings under memcaslap into a tabular tuner task:
benchmarks/tuners/tasks/memcached.yaml + .csv (format: shared/spec/tabular-tasks.md).

    python -m benchmarks.tuners.measure.memcached [--reps 3] [--seconds 2]

memcached is restarted (SIGKILL, as targets.md advises) for every row; each repetition walks
the grid in a new random order; every row records the load average. A `max_conns` below the
client's 32 connections makes memcaslap hang: the timeout turns that into a failed row, a real
cliff."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.tuners.measure import TASKS, free_port, walk_grid

GRID = {
    "threads": [1, 2, 4, 8],
    "reqs_per_event": [1, 20, 200],
    "cas": [True, False],
    "max_conns": [16, 1024],
}
CLIENT_CONNECTIONS = 32


def stop(pidfile: Path) -> None:
    if not pidfile.exists():
        return
    with contextlib.suppress(ProcessLookupError, ValueError):
        os.kill(int(pidfile.read_text().strip()), signal.SIGKILL)
    pidfile.unlink(missing_ok=True)


def measure(config: dict, tmp: Path, seconds: int) -> float | None:
    pidfile = tmp / "memcached.pid"
    stop(pidfile)
    port = free_port()
    command = ["memcached", "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-u", "root", "-d"]
    command += ["-P", str(pidfile), "-m", "64", "-t", str(config["threads"])]
    command += ["-R", str(config["reqs_per_event"]), "-c", str(config["max_conns"])]
    if not config["cas"]:
        command.append("-C")
    subprocess.run(command, check=True)
    for _ in range(50):
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    try:
        result = subprocess.run(
            [
                "timeout",
                str(seconds + 4),
                "memcaslap",
                "-s",
                f"127.0.0.1:{port}",
                "-T",
                "2",
                "-c",
                str(CLIENT_CONNECTIONS),
                "-t",
                f"{seconds}s",
            ],
            capture_output=True,
            text=True,
        )
    finally:
        stop(pidfile)
    found = re.search(r"TPS:\s+([0-9]+)", result.stdout)
    return float(found.group(1)) if found else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        walk_grid(
            GRID, "memcached", "tps", args.reps, lambda c: measure(c, Path(tmp), args.seconds)
        )
    (TASKS / "memcached.yaml").write_text(
        f"# memcached 1.6 under memcaslap -T 2 -c {CLIENT_CONNECTIONS} ({args.seconds} s per "
        "measurement);\n# measured by benchmarks/tuners/measure/memcached.py\n"
        "knobs:\n"
        "  threads: {type: int, values: [1, 2, 4, 8]}\n"
        "  reqs_per_event: {type: int, values: [1, 20, 200]}\n"
        "  cas: {type: bool, values: [false, true]}\n"
        "  max_conns: {type: int, values: [16, 1024]}\n"
        "objective: {metric: tps, direction: maximize}\n"
        "default: {threads: 4, reqs_per_event: 20, cas: true, max_conns: 1024}\n"
    )


if __name__ == "__main__":
    main()
