"""PostgreSQL's own lock waits: clients updating one row queue behind each other's transactions.
A backend waiting for a row lock sleeps on its latch in ProcSleep, which neither the futex
recording nor the postmaster's own off-CPU stacks show: the diagnosis of the postmaster named it
"mostly idle" or the children's CPU time. Commits queueing for the WAL flush wait for an LWLock
in a semaphore, whose stacks the frame-pointer walk loses in libc."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from benchmarks.tune.postgres import Postgres, cluster
from hone.diagnose.descendants import members
from hone.diagnose.perf_record import finished
from hone.diagnose.pgwaits import UNRECORDED
from hone.diagnose.report import Diagnosis

#: Each transaction holds the row lock a few milliseconds, so the other clients wait for it.
HOT_ROW = """BEGIN;
UPDATE hot SET n = n + 1 WHERE id = 1;
SELECT pg_sleep(0.003);
COMMIT;
"""


def test_only_settled_processes_are_listed_after_a_failed_start() -> None:
    """A process started a moment ago is left out once `settled` asks for a second's age."""
    old = subprocess.Popen(["sleep", "30"])
    time.sleep(1.2)
    young = subprocess.Popen(["sleep", "30"])
    try:
        me = os.getpid()
        assert {old.pid, young.pid} <= set(members(me))
        settled = members(me, settled=1.0)
        assert settled[0] == me and old.pid in settled and young.pid not in settled
    finally:
        for child in (old, young):
            child.kill()
            child.wait()


def _perf_record(output: Path, seconds: str) -> list[str]:
    return ["perf", "record", "-q", "-e", "sched:sched_switch", "-o", str(output), "--",
            "sleep", seconds]  # fmt: skip


def test_a_recording_perf_did_not_end_is_not_finished(tmp_path: Path) -> None:
    """perf fills in its data section's size as it ends; `perf script` refuses a file without
    it, which a recorder stopped while it was starting leaves."""
    done = tmp_path / "done.data"
    subprocess.run(_perf_record(done, "0.1"), check=True, capture_output=True)
    assert finished(done)
    cut = tmp_path / "cut.data"
    perf = subprocess.Popen(_perf_record(cut, "30"))
    try:
        deadline = time.monotonic() + 30
        while not (cut.exists() and cut.stat().st_size >= 56) and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        perf.kill()
        perf.wait()
    assert cut.stat().st_size >= 56
    assert not finished(cut)
    assert not finished(tmp_path / "missing.data")


#: (the CLI's result, the saved diagnosis)
Diagnosed = tuple[subprocess.CompletedProcess, Diagnosis]


def _psql(pg: Postgres, sql: str) -> None:
    argv = ["psql", "-h", str(pg.folder), "-p", str(pg.port), "-U", "postgres", "-qc", sql]
    subprocess.run(argv, check=True, capture_output=True)


def _connected(pg: Postgres, clients: int) -> None:
    """Wait until this many pgbench clients are connected: a backend forked while perf starts,
    after hone listed the postmaster's children and before perf follows its forks, is recorded
    by neither way, and on a loaded machine pgbench connects that late."""
    argv = ["psql", "-h", str(pg.folder), "-p", str(pg.port), "-U", "postgres", "-Atc",
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgbench'"]  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode == 0 and int(done.stdout) >= clients:
            return
        time.sleep(0.1)
    raise AssertionError(f"pgbench did not connect {clients} clients in 60 s")


def _diagnose(hone_cli, pg: Postgres, script: Path, tmp_path: Path, *options: str) -> Diagnosed:
    """`hone diagnose --pid` of the postmaster for 3 s while 6 pgbench clients run `script`
    (with pgbench's `options`), once they have connected."""
    postmaster = int((pg.folder / "data" / "postmaster.pid").read_text().split()[0])
    bench = subprocess.Popen(
        ["pgbench", "-h", str(pg.folder), "-p", str(pg.port), "-U", "postgres", "-n",
         "-c", "6", "-T", "60", *options, "-f", str(script), "postgres"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        # a client connecting per transaction (-C) is connected now and then
        _connected(pg, 1 if "-C" in options else 6)
        folder = tmp_path / "rep"
        done = hone_cli("diagnose", "--pid", str(postmaster), "-d", "3", "-o", str(folder))
    finally:
        bench.kill()
        bench.wait()
    assert done.returncode == 0, done.stderr
    return done, Diagnosis.load(folder / "diagnosis.hone")


@pytest.mark.slow
def test_clients_updating_one_row_are_named(hone_cli, tmp_path: Path) -> None:
    with cluster("fsync=off") as server:
        _psql(server, "CREATE TABLE hot (id int PRIMARY KEY, n int); INSERT INTO hot VALUES (1, 0)")
        script = tmp_path / "hot.sql"
        script.write_text(HOT_ROW)
        done, d = _diagnose(hone_cli, server, script, tmp_path)
    top = d.findings[0]
    assert top.kind == "pg-lock", [f.headline for f in d.findings]
    # the row's updater has not committed (transaction) or another waiter is first (tuple)
    assert "heavyweight lock on a t" in top.headline
    assert "statements seen waiting: UPDATE" in top.headline
    # the caller: heap_update, or the executor when static functions of the stripped binary lie
    # between (an UPDATE that re-reads the row its waited-for transaction changed)
    callers = ("in heap_update (UPDATE): ", "in standard_ExecutorRun (through unnamed functions)")
    assert any(c in line for c in callers for line in top.details), "\n".join(top.details)
    assert any("Keep these transactions short" in line for line in top.details)
    assert "verdict: PostgreSQL lock waits" in done.stdout
    assert "advice: many transactions change the same rows" in done.stdout


@pytest.mark.slow
def test_clients_connecting_per_transaction_are_recorded(hone_cli, tmp_path: Path) -> None:
    """Clients that connect for each transaction (pgbench -C): a backend lives a few
    milliseconds, and one that ended while perf started failed the whole recording of the
    backends (perf gives up on its process list), which had no lock waits at all."""
    with cluster("fsync=off") as server:
        _psql(server, "CREATE TABLE hot (id int PRIMARY KEY, n int); INSERT INTO hot VALUES (1, 0)")
        script = tmp_path / "hot.sql"
        script.write_text(HOT_ROW)
        done, d = _diagnose(hone_cli, server, script, tmp_path, "-C")
    assert not any(n.startswith(UNRECORDED) for n in d.notes), d.notes
    pg = next((f for f in d.findings if f.kind == "pg-lock"), None)
    assert pg is not None, [f.headline for f in d.findings]
    assert "heavyweight lock on a t" in pg.headline
    assert "note: PostgreSQL" not in done.stdout


@pytest.mark.slow
def test_commits_waiting_for_the_wal_flush_are_named(hone_cli, tmp_path: Path) -> None:
    """Clients committing one small INSERT each, with fsync on: every commit flushes the WAL
    under WALWriteLock, and the backends queue for it in PGSemaphoreLock, where the frame-pointer
    walk stops in libc; the futex recording's DWARF stacks name the lock's caller."""
    with cluster("fsync=on") as server:
        _psql(server, "CREATE TABLE log (n int)")
        script = tmp_path / "log.sql"
        script.write_text("INSERT INTO log VALUES (1);\n")
        _, d = _diagnose(hone_cli, server, script, tmp_path)
    pg = next((f for f in d.findings if f.kind == "pg-lock"), None)
    assert pg is not None, [f.headline for f in d.findings]
    assert "lightweight lock (LWLock) WALWriteLock" in pg.headline
    assert any(" in XLogFlush: " in line for line in pg.details), "\n".join(pg.details)
    assert any("commit_delay" in line for line in pg.details)
    # the backends' waits were recorded: a finding on them does not say they were not
    assert not any("does not record" in f.headline for f in d.findings), d.findings
