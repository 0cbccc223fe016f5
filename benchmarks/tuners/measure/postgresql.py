"""Measure a grid of PostgreSQL settings under pgbench into a tabular tuner task:
benchmarks/tuners/tasks/postgresql-15.yaml + .csv (format: shared/spec/tabular-tasks.md; named
apart from the pool table PostgreSQL, which others measured elsewhere).

    python -m benchmarks.tuners.measure.postgresql [--reps 5] [--seconds 3]

One throwaway cluster (benchmarks/tune/postgres.py, run as the postgres user) initialised once
with `pgbench -i -s 10`; for every row it is restarted with the row's settings (written to a
file the server includes, so no value passes through a shell), warmed up by a 1 s pgbench run
(a restarted server's buffer pool is cold) and measured by `pgbench -c 8 -j 2`: the metric is
its tps. Each repetition walks the grid in a new random order; every row records the load
average."""

from __future__ import annotations

import argparse
import contextlib
import re
import shutil
import subprocess

from benchmarks.tune.postgres import AS_POSTGRES, PG_BIN, Postgres, cluster
from benchmarks.tuners.measure import TASKS, task_yaml, walk_grid

# Sizes in MB are ordered ints (a knob NAME_mb sets NAME to "<value>MB").
GRID = {
    "shared_buffers_mb": [16, 128, 512],
    "synchronous_commit": ["on", "off"],
    "wal_buffers": ["-1", "64kB"],
    "max_wal_size_mb": [32, 1024],
    "commit_delay": [0, 1000],
}
DEFAULT = {
    "shared_buffers_mb": 128,
    "synchronous_commit": "on",
    "wal_buffers": "-1",
    "max_wal_size_mb": 1024,
    "commit_delay": 0,
}
ROW_SETTINGS = "hone_row.conf"
NAME = "postgresql-15"


def pgbench(server: Postgres, *args: str, timeout: int) -> subprocess.CompletedProcess:
    command = ["timeout", str(timeout), *AS_POSTGRES, str(PG_BIN / "pgbench")]
    command += ["-h", str(server.folder), "-p", str(server.port), *args, "postgres"]
    return subprocess.run(command, capture_output=True, text=True)


def restart(server: Postgres, config: dict) -> bool:
    """Stop cleanly (a shutdown checkpoint, so no crash recovery lands in the next row) and
    start with the row's settings; False when the server does not come up."""
    with contextlib.suppress(subprocess.CalledProcessError):
        server.ctl("-m", "fast", "stop")
    settings = server.folder / "data" / ROW_SETTINGS
    lines = [
        f"{name.removesuffix('_mb')} = '{value}{'MB' if name.endswith('_mb') else ''}'\n"
        for name, value in config.items()
    ]
    settings.write_text("".join(lines))
    shutil.chown(settings, "postgres")
    try:
        server.start()
    except subprocess.CalledProcessError:
        return False
    return True


def measure(config: dict, server: Postgres, seconds: int) -> float | None:
    if not restart(server, config):
        return None
    pgbench(server, "-c", "8", "-j", "2", "-T", "1", timeout=60)  # warm-up
    result = pgbench(server, "-c", "8", "-j", "2", "-T", str(seconds), timeout=seconds + 60)
    found = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", result.stdout)
    return float(found.group(1)) if result.returncode == 0 and found else None


def yaml_text(seconds: int) -> str:
    comment = (
        f"PostgreSQL 15 under pgbench -c 8 -j 2 -T {seconds} (TPC-B-like, scale 10), tps;\n"
        "restarted with the row's settings and warmed up by a 1 s run before every row;\n"
        "wal_buffers -1 = 1/32 of shared_buffers, at most 16 MB (4 MB at the default);\n"
        "measured by benchmarks/tuners/measure/postgresql.py"
    )
    return task_yaml(comment, GRID, DEFAULT, "tps")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=3)
    args = parser.parse_args()
    with cluster() as server:
        conf = server.folder / "data" / "postgresql.conf"
        with conf.open("a") as handle:
            handle.write(f"include_if_exists = '{ROW_SETTINGS}'\n")
        initialised = pgbench(server, "-i", "-s", "10", "-q", timeout=600)
        if initialised.returncode != 0:
            raise SystemExit(f"pgbench -i failed: {initialised.stderr.strip()}")
        walk_grid(GRID, NAME, "tps", args.reps, lambda c: measure(c, server, args.seconds))
    (TASKS / f"{NAME}.yaml").write_text(yaml_text(args.seconds))


if __name__ == "__main__":
    main()
