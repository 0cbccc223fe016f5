"""Measure a grid of redis settings under redis-benchmark into a tabular tuner task:
benchmarks/tuners/tasks/redis-7.yaml + .csv (format: shared/spec/tabular-tasks.md; named apart
from the pool table redis, which others measured elsewhere).

    python -m benchmarks.tuners.measure.redis [--reps 5] [--requests 40000]

redis-server is started for every row on a free port with a config file and directory of its
own (written here, so no value passes through a shell) and killed after it; each repetition
walks the grid in a new random order; every row records the load average. The objective is
the mean of redis-benchmark's SET and GET requests/s. On 2 vCPUs shared with the client,
io-threads busy-spin: such a row can crawl past its timeout, a failed row (a real cliff)."""

from __future__ import annotations

import argparse
import contextlib
import csv
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.tuners.measure import TASKS, free_port, task_yaml, walk_grid

GRID = {
    "io_threads": [1, 2, 4],
    "io_threads_do_reads": [False, True],
    "appendfsync": ["off", "everysec", "always"],
    "latency_tracking": [False, True],
    "hz": [10, 500],
}
DEFAULT = {
    "io_threads": 1,
    "io_threads_do_reads": False,
    "appendfsync": "off",
    "latency_tracking": True,
    "hz": 10,
}
CLIENTS = 50
NAME = "redis-7"
TIMEOUT = 6  # seconds for both tests; redis's defaults take about 1 s at 40000 requests


def config_text(config: dict, folder: Path, port: int) -> str:
    """redis.conf for one row: the fixed settings of targets.md, then the row's knobs."""
    yes = {True: "yes", False: "no"}
    lines = [
        "bind 127.0.0.1",
        f"port {port}",
        "daemonize yes",
        f'pidfile "{folder / "redis.pid"}"',
        f'dir "{folder}"',
        'save ""',
        f"io-threads {config['io_threads']}",
        f"io-threads-do-reads {yes[config['io_threads_do_reads']]}",
        f"latency-tracking {yes[config['latency_tracking']]}",
        f"hz {config['hz']}",
    ]
    if config["appendfsync"] == "off":
        lines.append("appendonly no")
    else:
        lines += ["appendonly yes", f"appendfsync {config['appendfsync']}"]
    return "\n".join(lines) + "\n"


def stop(pidfile: Path) -> None:
    """SIGKILL (the row's data is thrown away), then wait until the process is gone."""
    with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
        pid = int(pidfile.read_text().strip())
        os.kill(pid, signal.SIGKILL)
        for _ in range(100):  # a reparented daemon is reaped late: a zombie is gone enough
            stat = Path(f"/proc/{pid}/stat")
            if not stat.exists() or stat.read_text().split(") ")[-1].startswith("Z"):
                break
            time.sleep(0.02)


def measure(config: dict, tmp: Path, requests: int) -> float | None:
    folder = Path(tempfile.mkdtemp(dir=tmp))
    port = free_port()
    conf = folder / "redis.conf"
    conf.write_text(config_text(config, folder, port))
    try:
        subprocess.run(["redis-server", str(conf)], check=True, capture_output=True)
        ping = ["redis-cli", "-p", str(port), "ping"]
        for _ in range(100):
            answer = subprocess.run(ping, capture_output=True, text=True)
            if answer.stdout.strip() == "PONG":
                break
            time.sleep(0.05)
        else:
            return None
        bench = ["timeout", str(TIMEOUT), "redis-benchmark", "-p", str(port), "-t", "set,get"]
        bench += ["-c", str(CLIENTS), "-n", str(requests), "--csv"]
        result = subprocess.run(bench, capture_output=True, text=True)
    finally:
        stop(folder / "redis.pid")
        shutil.rmtree(folder, ignore_errors=True)
    rps = {row["test"]: float(row["rps"]) for row in csv.DictReader(result.stdout.splitlines())}
    if result.returncode != 0 or set(rps) != {"SET", "GET"}:
        return None
    return round((rps["SET"] + rps["GET"]) / 2, 2)


def yaml_text(requests: int) -> str:
    comment = (
        f"redis 7.0 under redis-benchmark -t set,get -c {CLIENTS} -n {requests} (about 1 s per\n"
        f"measurement at redis's defaults, a timeout of {TIMEOUT} s = a failed row); the metric\n"
        "is the mean of SET and GET requests/s; appendfsync off = appendonly no; redis\n"
        "restarted for every row; measured by benchmarks/tuners/measure/redis.py"
    )
    return task_yaml(comment, GRID, DEFAULT, "rps")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--requests", type=int, default=40000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        walk_grid(GRID, NAME, "rps", args.reps, lambda c: measure(c, Path(tmp), args.requests))
    (TASKS / f"{NAME}.yaml").write_text(yaml_text(args.requests))


if __name__ == "__main__":
    main()
