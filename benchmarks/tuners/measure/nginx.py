"""Measure a grid of nginx settings under wrk into a tabular tuner task:
benchmarks/tuners/tasks/nginx.yaml + .csv (format: shared/spec/tabular-tasks.md).

    python -m benchmarks.tuners.measure.nginx [--reps 3] [--seconds 3]

Uses the nginx example's own scripts (examples/nginx) and hone's config actuator; each
repetition walks the grid in a new random order; every row records the load average."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.tuners.measure import TASKS, free_port, walk_grid
from hone.knobs import actuator_from_spec

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "nginx"
GRID = {
    "worker_processes": [1, 2, 4],
    "worker_connections": [256, 1024, 4096],
    "keepalive_requests": [10, 100, 10000],
    "sendfile": ["on", "off"],
}


def measure(config: dict, env: dict, seconds: int) -> float | None:
    conf = Path(env["HONE_WORKDIR"]) / "nginx" / "nginx.conf"
    for name, value in config.items():
        actuator_from_spec(
            {"kind": "config", "file": str(conf), "format": "space", "key": name}
        ).apply(str(value))
    subprocess.run(["sh", str(EXAMPLE / "stop.sh")], env=env, check=False)
    subprocess.run(["sh", str(EXAMPLE / "start.sh")], env=env, check=True)
    url = f"http://127.0.0.1:{env['HONE_PORT']}/4k.html"
    for _ in range(50):
        if subprocess.run(["curl", "-sf", "-o", "/dev/null", url]).returncode == 0:
            break
        time.sleep(0.1)
    else:
        raise RuntimeError(f"nginx does not serve {url}: see its error.log")
    result = subprocess.run(
        ["timeout", str(seconds + 15), "wrk", "-t2", "-c64", f"-d{seconds}s", url],
        capture_output=True,
        text=True,
    )
    found = re.search(r"Requests/sec:\s+([0-9.]+)", result.stdout)
    if not found or "Non-2xx" in result.stdout:  # error pages are not the page
        return None
    return float(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)  # nginx's workers run as nobody: a private directory serves 403s
        env = {
            **os.environ,
            "HONE_WORKDIR": tmp,
            "HONE_PORT": str(free_port()),
            "HONE_PROJECT_DIR": str(EXAMPLE),
        }
        subprocess.run(["sh", str(EXAMPLE / "setup.sh")], env=env, check=True)
        try:
            walk_grid(GRID, "nginx", "rps", args.reps, lambda c: measure(c, env, args.seconds))
        finally:
            subprocess.run(["sh", str(EXAMPLE / "stop.sh")], env=env, check=False)
    (TASKS / "nginx.yaml").write_text(
        "# nginx 1.22 serving a 4 KiB page to wrk -t2 -c64 (3 s per measurement);\n"
        "# measured by benchmarks/tuners/measure/nginx.py\n"
        "knobs:\n"
        "  worker_processes: {type: int, values: [1, 2, 4]}\n"
        "  worker_connections: {type: int, values: [256, 1024, 4096]}\n"
        "  keepalive_requests: {type: int, values: [10, 100, 10000]}\n"
        '  sendfile: {type: categorical, values: ["on", "off"]}\n'
        "objective: {metric: rps, direction: maximize}\n"
        "default: {worker_processes: 2, worker_connections: 1024, keepalive_requests: 100, "
        'sendfile: "on"}\n'
    )


if __name__ == "__main__":
    main()
