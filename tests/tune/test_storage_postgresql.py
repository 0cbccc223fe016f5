"""Studies in a real PostgreSQL database (`--storage URL`), as several machines would share."""

from __future__ import annotations

from hone.space import IntRange, SearchSpace
from hone.storage import StudyStore


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
