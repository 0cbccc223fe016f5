"""`hone worker` and a shared PostgreSQL server that goes away: stopped (immediate shutdown)
while two workers run trials and started again seconds later, both workers wait, record the
trials they were running and finish the study, neither failing the other's trial as lost; a
confirmer whose lock went with the restart leaves the confirmation to one worker; an outage
longer than `--db-wait` stops the worker with its knob put back and one line."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from started_hone import Process
from test_workers import machine, start, wait_for

from hone.storage import StudyStore
from hone.storage.summary import read_trials


def worker(folder: Path, url: str, name: str, db_wait: float, budget: int = 2) -> Process:
    return start(folder, url, name, 2.0, budget, "--db-wait", str(db_wait))


def searching(folder: Path, proc: Process, deadline: float) -> None:
    """Wait until the worker is in a search trial: its knob moved off 0."""
    while (folder / "app.conf").read_text() == "level 0\n":
        assert time.monotonic() < deadline and proc.poll() is None, "no search trial"
        time.sleep(0.05)


def both_searching(trials: list) -> list:
    running = [t for t in trials if t.phase == "search" and t.state == "running"]
    return running if len(running) == 2 else []


def test_workers_wait_out_a_postgresql_restart_and_record_their_trials(
    postgres: Any,  # conftest.Postgres
    tmp_path: Path,
) -> None:
    """The server is down 3 s, longer than the lease, while each worker's 2 s trial ends: each
    holds its result until the server is back. The one back first must not fail the other's
    trial because its heartbeat is 3 s old: nobody could see it for those 3 s."""
    names = ["a", "b"]
    folders = {
        n: machine(tmp_path, n, search_sleep=2, confirm="{candidates: 1, rounds: 2}") for n in names
    }
    procs = {n: worker(folders[n], postgres.url, n, db_wait=60) for n in names}
    store = StudyStore(postgres.url)
    running = [t.number for t in wait_for(store, 40, both_searching, "not both in a trial")]
    postgres.stop()
    time.sleep(3)
    postgres.start()
    outputs = {n: procs[n].communicate(timeout=90) for n in names}
    for name, (out, err) in outputs.items():
        assert procs[name].returncode == 0, err[-800:]
        assert "Traceback" not in out + err
        assert f"waiting for the database at 127.0.0.1:{postgres.port}/postgres" in out + err
        assert "answers again" in out + err
    store = StudyStore(postgres.url)  # (the first one's connections died with the server)
    trials = read_trials(store, store.find("shared"))
    held = [t for t in trials if t.number in running]
    assert all(t.state == "complete" and t.score is not None for t in held), held
    assert not [t for t in trials if t.lost or t.state == "running"]
    assert store.find("shared").state == "finished"


def test_an_outage_longer_than_db_wait_stops_the_worker_with_its_knob_back(
    postgres: Any,
    tmp_path: Path,
) -> None:
    folder = machine(tmp_path, "m", search_sleep=1)
    proc = worker(folder, postgres.url, "m", db_wait=2)
    searching(folder, proc, time.monotonic() + 40)
    postgres.stop()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err[-800:]
    assert "Traceback" not in out + err
    waits = [line for line in (out + err).splitlines() if "waiting for the database" in line]
    assert len(waits) == 1 and f"127.0.0.1:{postgres.port}/postgres" in waits[0], out + err
    assert "Connection refused" in waits[0], waits  # the driver's words, not Optuna's guess
    assert err.strip().splitlines()[-1] == (
        "hone: stopped, every knob put back: the database at "
        f"127.0.0.1:{postgres.port}/postgres did not answer for 2 s (--db-wait): "
        + err.strip().splitlines()[-1].split("(--db-wait): ", 1)[-1]
    )
    assert (folder / "app.conf").read_text() == "level 0\n"


def test_a_confirmer_whose_lock_went_with_a_restart_gives_way_to_one_confirmation(
    postgres: Any,
    tmp_path: Path,
) -> None:
    """A restart releases the confirm lock with the confirmer's connection, and the other
    worker may take it: the confirmer sees its lock gone before it records its reading and
    abandons its confirmation, so the confirmation after the restart is one worker's alone,
    and it is that worker's decision the study stores."""
    names = ["a", "b"]
    confirm = "{candidates: 1, rounds: 2}"
    folders = {n: machine(tmp_path, n, search_sleep=1.5, confirm=confirm) for n in names}
    procs = {n: worker(folders[n], postgres.url, n, db_wait=60) for n in names}
    store = StudyStore(postgres.url)

    def measuring_the_candidate(trials: list) -> list:
        return [
            t
            for t in trials
            if t.phase == "confirm" and t.state == "running" and t.config["level"] != 0
        ]

    (confirming,) = wait_for(store, 60, measuring_the_candidate, "no worker confirmed")
    postgres.stop()
    time.sleep(3)
    postgres.start()
    for name in names:
        out, err = procs[name].communicate(timeout=90)
        assert procs[name].returncode == 0, err[-800:]
        assert "Traceback" not in out + err
    store = StudyStore(postgres.url)
    study = store.find("shared")
    trials = read_trials(store, study)
    result = store.storage.get_study_user_attrs(study.study_id)["result"]
    assert study.state == "finished" and result["outcome"] == "applied", result
    cut = next(t for t in trials if t.number == confirming.number)
    # failed by whichever came first: the confirmer abandoning, or the worker taking over
    assert cut.state == "fail" and cut.lost and "confirm lock" in (cut.error or ""), cut.error
    after = [t for t in trials if t.phase == "confirm" and t.number > confirming.number]
    assert after and {t.worker for t in after} == {result["confirmed_by"]}
    assert all(t.state == "complete" for t in after)
    assert not [t for t in trials if t.state == "running"]
