"""Measure a grid of HAProxy settings under wrk into a tabular tuner task:
benchmarks/tuners/tasks/haproxy.yaml + .csv (format: shared/spec/tabular-tasks.md).

    python -m benchmarks.tuners.measure.haproxy [--reps 5] [--seconds 3]

HAProxy balances HTTP on loopback over two nginx backends (one worker each, a 4 KiB page),
started once for the whole run; HAProxy itself is started for every row with a config file
written here (no value passes through a shell) and killed after it. The clients are wrk's 64
connections, each closing after its request (`Connection: close`): the load of clients that
do not keep connections alive, where every request is the first of its client connection,
so whether HAProxy may hand it an idle server connection (`http-reuse`) decides whether a
request costs one new TCP connection or two. Each repetition walks the grid in a new random
order; every row records the load average. A row fails when wrk reports an error (a socket
error or a non-2xx response) or prints no result before its timeout."""

from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.tuners.measure import TASKS, free_port, task_yaml, walk_grid

GRID = {
    "nbthread": [1, 2, 4],
    "http_reuse": ["never", "safe", "aggressive", "always"],
    "http_server_close": [False, True],
    "server_maxconn": ["4", "16", "unlimited"],
}
# HAProxy 2.6's own defaults: as many threads as CPUs (2 here), http-reuse safe, connections
# kept alive on both sides (option http-keep-alive), no limit per server (maxconn 0).
DEFAULT = {
    "nbthread": 2,
    "http_reuse": "safe",
    "http_server_close": False,
    "server_maxconn": "unlimited",
}
NAME = "haproxy"
CONNECTIONS = 64
BACKENDS = 2
PAGE = "4k.html"


def wait_for(port: int, process: subprocess.Popen, log: Path) -> None:
    """Until the port accepts a connection; a process that exits first is a broken config."""
    for _ in range(200):
        if process.poll() is not None:
            raise RuntimeError(f"{process.args[0]} exited: {log.read_text().strip()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{process.args[0]} does not listen on {port}: see {log}")


def start_backends(tmp: Path, processes: list[subprocess.Popen]) -> list[int]:
    """Two nginx instances in the foreground, each one worker serving the page on a port;
    each joins `processes` as it starts, so the caller stops what started if one fails."""
    ports = []
    for index in range(BACKENDS):
        prefix = tmp / f"nginx{index}"
        (prefix / "html").mkdir(parents=True)
        (prefix / "html" / PAGE).write_text("x" * 4096)
        port = free_port()
        (prefix / "nginx.conf").write_text(
            "daemon off;\n"
            "worker_processes 1;\n"
            f'pid "{prefix / "nginx.pid"}";\n'
            "events { worker_connections 4096; }\n"
            "http {\n"
            "    access_log off;\n"
            f'    server {{ listen 127.0.0.1:{port}; root "{prefix / "html"}"; }}\n'
            "}\n"
        )
        log = prefix / "error.log"
        conf = prefix / "nginx.conf"
        command = ["nginx", "-e", str(log), "-p", str(prefix), "-c", str(conf)]
        processes.append(subprocess.Popen(command))
        wait_for(port, processes[-1], log)
        ports.append(port)
    return ports


def config_text(config: dict, port: int, backends: list[int]) -> str:
    """haproxy.cfg for one row: the row's knobs, the rest HAProxy's defaults."""
    maxconn = config["server_maxconn"]
    limit = "" if maxconn == "unlimited" else f" maxconn {maxconn}"
    mode = "http-server-close" if config["http_server_close"] else "http-keep-alive"
    lines = [
        "global",
        f"    nbthread {config['nbthread']}",
        "defaults",
        "    mode http",
        "    timeout connect 5s",
        "    timeout client 30s",
        "    timeout server 30s",
        "    timeout queue 30s",
        f"    option {mode}",
        f"    http-reuse {config['http_reuse']}",
        "frontend web",
        f"    bind 127.0.0.1:{port}",
        "    default_backend pages",
        "backend pages",
        "    balance roundrobin",
        *(f"    server nginx{i} 127.0.0.1:{p}{limit}" for i, p in enumerate(backends)),
    ]
    return "\n".join(lines) + "\n"


def measure(config: dict, tmp: Path, backends: list[int], seconds: int) -> float | None:
    port = free_port()
    conf, log = tmp / "haproxy.cfg", tmp / "haproxy.log"
    conf.write_text(config_text(config, port, backends))
    with open(log, "w") as errors:
        haproxy = subprocess.Popen(["haproxy", "-db", "-f", str(conf)], stderr=errors)
    try:
        wait_for(port, haproxy, log)
        bench = ["timeout", str(seconds + 15), "wrk", "-t2", f"-c{CONNECTIONS}", f"-d{seconds}s"]
        bench += ["-H", "Connection: close", f"http://127.0.0.1:{port}/{PAGE}"]
        result = subprocess.run(bench, capture_output=True, text=True)
    finally:
        haproxy.kill()
        haproxy.wait()
    found = re.search(r"Requests/sec:\s+([0-9.]+)", result.stdout)
    failed = "Socket errors" in result.stdout or "Non-2xx" in result.stdout
    if result.returncode != 0 or not found or failed:
        return None
    return float(found.group(1))


def yaml_text(seconds: int) -> str:
    comment = (
        f"HAProxy 2.6 on loopback balancing {BACKENDS} nginx 1.22 backends (one worker each, a\n"
        f"4 KiB page) for wrk -t2 -c{CONNECTIONS} -H 'Connection: close' ({seconds} s per "
        "measurement);\n"
        'server_maxconn "unlimited" = no maxconn (0); http_server_close false = option\n'
        "http-keep-alive; the default is HAProxy's own; measured by\n"
        "benchmarks/tuners/measure/haproxy.py"
    )
    return task_yaml(comment, GRID, DEFAULT, "rps")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        os.chmod(tmp, 0o755)  # nginx's workers run as nobody: a private directory serves 403s
        processes: list[subprocess.Popen] = []
        try:
            backends = start_backends(tmp, processes)
            walk_grid(
                GRID, NAME, "rps", args.reps, lambda c: measure(c, tmp, backends, args.seconds)
            )
        finally:
            for process in processes:  # SIGTERM: the master stops its worker too
                process.terminate()
                process.wait()
    (TASKS / f"{NAME}.yaml").write_text(yaml_text(args.seconds))


if __name__ == "__main__":
    main()
