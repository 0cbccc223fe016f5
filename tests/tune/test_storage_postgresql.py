"""Studies in a real PostgreSQL database (`--storage URL`), as several machines would share."""

from __future__ import annotations

import time

import pytest
import sqlalchemy

from hone.space import IntRange, SearchSpace
from hone.storage import StudyStore
from hone.storage.lease import running_trials
from hone.storage.outage import Outage
from hone.storage.store import TrialClosed
from hone.storage.summary import summaries
from hone.tune.views import workers_text


def test_studies_and_trials_round_trip_in_postgresql(postgres_url: str) -> None:
    store = StudyStore(postgres_url)
    study = store.create("shared", {"engine": "auto"})
    space = SearchSpace({"x": IntRange(1, 9)})
    for x in (3, 5):
        trial = store.start_trial(study, space, {"x": x}, "search")
        store.finish_trial(trial, score=x * 2.0, metrics={"v": x * 2.0})
    other = StudyStore(postgres_url)  # another process or machine opening the same database
    trials = other.trials(other.find("shared"))
    assert [(t.config, t.score, t.state) for t in trials] == [
        ({"x": 3}, 6.0, "complete"),
        ({"x": 5}, 10.0, "complete"),
    ]


def test_a_lost_trial_is_closed_once_and_a_late_result_is_refused(postgres_url: str) -> None:
    """What a worker cut off longer than its lease meets: another worker failed its trial
    (once: the row is locked), and its late result is refused rather than written over it."""
    store = StudyStore(postgres_url)
    study = store.create("leased", {"engine": "auto"})
    space = SearchSpace({"x": IntRange(1, 9)})
    trial = store.start_trial(study, space, {"x": 4}, "search", lease=True, worker="w1")
    (running,) = running_trials(store, study.study_id)
    assert running.worker == "w1" and 0 <= running.silent < 5  # its first heartbeat is there
    assert store.fail_trial(trial, "worker w1 stopped reporting", lost=True)
    assert not store.fail_trial(trial, "twice")
    with pytest.raises(TrialClosed):
        store.finish_trial(trial, score=1.0, metrics={"v": 1.0})
    (stored,) = store.trials(study)
    assert (stored.state, stored.error, stored.lost) == (
        "fail",
        "worker w1 stopped reporting",
        True,
    )
    assert running_trials(store, study.study_id) == []


def test_a_result_whose_commit_reply_was_lost_is_stored_once_not_dropped(
    postgres_url: str,
) -> None:
    """The server commits a worker's result and the connection drops before the reply (a
    restart): the worker's retry finds the trial ended with its own outcome, and neither drops
    the result nor writes it twice. Another outcome is still refused."""
    store = StudyStore(postgres_url)
    study = store.create("lost-reply", {"engine": "auto"})
    space = SearchSpace({"x": IntRange(1, 9)})
    trial = store.start_trial(study, space, {"x": 4}, "search", lease=True, worker="w1")
    tries: list[int] = []

    def commit_then_lose_the_reply(*args: object, **kwargs: object) -> None:
        store.finish_trial(*args, **kwargs)  # type: ignore[arg-type]
        tries.append(1)
        if len(tries) == 1:
            raise sqlalchemy.exc.OperationalError(
                "COMMIT", {}, Exception("server closed the connection unexpectedly")
            )

    said: list[str] = []
    outage = Outage(postgres_url, limit=10, say=said.append)
    result = {"score": 8.0, "metrics": {"v": 8.0, "p99": [1.5, 2.0]}, "seconds": 1.25}
    outage.call(commit_then_lose_the_reply, trial, **result)
    assert len(tries) == 2 and "answers again" in said[-1]
    (stored,) = store.trials(study)
    assert (stored.state, stored.score, stored.metrics) == ("complete", 8.0, result["metrics"])
    with pytest.raises(TrialClosed):  # a different outcome is another process's, not a retry
        store.finish_trial(trial, score=9.0, metrics={"v": 9.0, "p99": [1.5, 2.0]}, seconds=1.25)
    assert not store.fail_trial(trial, "worker w1 stopped reporting", lost=True)


def test_a_worker_silent_past_its_lease_is_listed_silent(postgres_url: str) -> None:
    """A lone worker killed mid-trial leaves no other worker to fail its trial as lost:
    `hone studies` listed it as running that trial however long it had been dead."""
    store = StudyStore(postgres_url)
    study = store.create("alone", {"engine": "auto", "workers": True})
    space = SearchSpace({"x": IntRange(1, 9)})
    store.start_trial(study, space, {"x": 4}, "search", lease=True, worker="w1", lease_seconds=1)
    store.storage.set_study_user_attr(study.study_id, "worker:w1", {"state": "running"})
    (row,) = summaries(store)
    assert workers_text(row["workers"]) == "w1: #0"  # its first heartbeat is fresh
    time.sleep(1.5)
    (row,) = summaries(store)
    assert [(w["state"], w["running"]) for w in row["workers"]] == [("silent", 0)]
    assert workers_text(row["workers"]) == "w1: #0 (silent)"
