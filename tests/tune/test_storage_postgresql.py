"""Studies in a real PostgreSQL database (`--storage URL`), as several machines would share."""

from __future__ import annotations

import pytest

from hone.space import IntRange, SearchSpace
from hone.storage import StudyStore
from hone.storage.lease import running_trials
from hone.storage.store import TrialClosed


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
