"""PostgreSQL's own lock waits: clients updating one row queue behind each other's transactions.
A backend waiting for a row lock sleeps on its latch in ProcSleep, which neither the futex
recording nor the postmaster's own off-CPU stacks show: the diagnosis of the postmaster named it
"mostly idle" or the children's CPU time."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from benchmarks.tune.postgres import Postgres, cluster
from hone.diagnose.pgwaits import classify
from hone.diagnose.report import Diagnosis

#: Each transaction holds the row lock a few milliseconds, so the other clients wait for it.
HOT_ROW = """BEGIN;
UPDATE hot SET n = n + 1 WHERE id = 1;
SELECT pg_sleep(0.003);
COMMIT;
"""


@pytest.fixture
def server() -> Postgres:
    with cluster("fsync=off") as pg:
        yield pg


def _psql(pg: Postgres, sql: str) -> None:
    argv = ["psql", "-h", str(pg.folder), "-p", str(pg.port), "-U", "postgres", "-qc", sql]
    subprocess.run(argv, check=True, capture_output=True)


def test_clients_updating_one_row_are_named(server: Postgres, hone_cli, tmp_path: Path) -> None:
    _psql(server, "CREATE TABLE hot (id int PRIMARY KEY, n int); INSERT INTO hot VALUES (1, 0)")
    script = tmp_path / "hot.sql"
    script.write_text(HOT_ROW)
    postmaster = int((server.folder / "data" / "postmaster.pid").read_text().split()[0])
    bench = subprocess.Popen(
        ["pgbench", "-h", str(server.folder), "-p", str(server.port), "-U", "postgres", "-n",
         "-c", "6", "-T", "60", "-f", str(script), "postgres"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        folder = tmp_path / "rep"
        done = hone_cli("diagnose", "--pid", str(postmaster), "-d", "3", "-o", str(folder))
    finally:
        bench.kill()
        bench.wait()
    assert done.returncode == 0, done.stderr
    d = Diagnosis.load(folder / "diagnosis.hone")
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


def test_an_lwlock_wait_is_named_by_its_caller() -> None:
    """A commit's wait for the WAL flush, as perf folds it (root first); the lock's name is not
    on the stack, its caller tells it."""
    stack = (
        "postgres;main;PostmasterMain;PostgresMain;[postgres];CommitTransactionCommand;"
        "[postgres];XLogFlush;LWLockAcquireOrWait;PGSemaphoreLock;do_futex_wait;__schedule"
    )
    wait = classify(stack)
    assert wait is not None
    assert (wait.kind, wait.lock, wait.caller) == ("lwlock", "WALWriteLock", "XLogFlush")
    assert classify("postgres;main;PostgresMain;pq_getbyte;secure_read;epoll_wait") is None
