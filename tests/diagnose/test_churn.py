"""Process churn: PostgreSQL forking a backend for each connection of clients that connect per
transaction (pgbench -C) is named, with a pool as the advice; the same clients connected once
are not, nor a script whose children exec its commands. The forks, execs and exits come from
the window's counting perf stat."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.tune.postgres import Postgres, cluster
from hone.diagnose import syscalls
from hone.diagnose.churn import Churn
from hone.diagnose.jobs import Job, Processes
from hone.diagnose.report import Diagnosis


def test_forks_and_exits_are_counted(tmp_path: Path) -> None:
    """A shell that starts 30 commands, counted as the window counts a process's calls: 30
    forks, execs and exits, and no churn (a build or a script starts its work so)."""
    shell = subprocess.Popen(["sh", "-c", "read x; for i in $(seq 30); do /bin/true; done"],
                             stdin=subprocess.PIPE)  # fmt: skip
    output, procs = tmp_path / "calls.csv", Processes()
    argv = syscalls.count_argv([shell.pid], output, 30, forks=True)
    job = Job("syscalls", lambda: syscalls.count(argv, output, procs.start))
    job.start()
    deadline = time.monotonic() + 20
    while not output.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)  # perf writes its file's header, then enables the counters
    shell.communicate(b"go\n", timeout=20)
    procs.stop()
    job.join()
    counted = job.result
    assert isinstance(counted, syscalls.Count), job.error
    assert counted.forks >= 30 and counted.execs >= 30 and counted.exits >= 30, counted
    assert counted.calls > 0
    # each child exec'd a command: the script's work, no copy of the shell came and went
    moved = Churn(counted.forks, counted.execs, counted.exits, counted.seconds, 1.0, 30, 1.0)
    assert moved.rate < 1 and not moved.evidence


@pytest.fixture(scope="module")
def server() -> Iterator[Postgres]:
    with cluster("fsync=off") as pg:
        argv = ["pgbench", "-h", str(pg.folder), "-p", str(pg.port), "-U", "postgres"]
        subprocess.run([*argv, "-i", "-s", "1", "-q", "postgres"], check=True, capture_output=True)
        yield pg


def _diagnosed(hone_cli, pg: Postgres, tmp_path: Path, *options: str) -> Diagnosis:
    """`hone diagnose --pid` of the postmaster for 3 s under 4 read-only pgbench clients."""
    postmaster = int((pg.folder / "data" / "postmaster.pid").read_text().split()[0])
    bench = subprocess.Popen(
        ["pgbench", "-h", str(pg.folder), "-p", str(pg.port), "-U", "postgres", "-n", "-S",
         "-c", "4", "-j", "2", "-T", "60", *options, "postgres"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        time.sleep(1)
        folder = ["-d", "3", "--no-offcpu", "--no-locks", "-o", str(tmp_path / "r")]
        done = hone_cli("diagnose", "--pid", str(postmaster), *folder)
    finally:
        bench.kill()
        bench.wait()
    assert done.returncode == 0, done.stderr
    return Diagnosis.load(tmp_path / "r" / "diagnosis.hone")


@pytest.mark.slow
def test_a_backend_per_transaction_is_named(hone_cli, server: Postgres, tmp_path: Path) -> None:
    d = _diagnosed(hone_cli, server, tmp_path, "-C")
    found = [f for f in d.findings if f.kind == "churn"]
    assert found, [f.headline for f in d.findings]
    assert "PostgreSQL forks a backend for each connection" in found[0].headline
    assert any("pgbouncer" in line for line in found[0].details)
    # it forked for each connection: far above the rate of a pool's occasional replacement
    assert "copies of it a second started and ended" in found[0].headline


@pytest.mark.slow
def test_connections_kept_open_are_no_churn(hone_cli, server: Postgres, tmp_path: Path) -> None:
    d = _diagnosed(hone_cli, server, tmp_path)
    assert not any(f.kind == "churn" for f in d.findings), [f.headline for f in d.findings]
