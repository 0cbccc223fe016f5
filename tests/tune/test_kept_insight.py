"""The knob insight (importance and effect curves) kept with a study is what `hone show`, the
report and the web UI read while the study's scored trials are the ones it was fitted on, and is
fitted again once they change."""

from __future__ import annotations

from pathlib import Path

from hone.space.serialize import domain_to_dict
from hone.storage import StudyStore
from hone.tune.views import keep_insight, knob_insight
from tests.importance.test_importance_shares import mixed_observations, mixed_space


def _study(tmp_path: Path, count: int = 30) -> tuple[StudyStore, object]:
    store = StudyStore(f"sqlite:///{tmp_path / 'studies.db'}")
    space = mixed_space()
    domains = {n: domain_to_dict(d) for n, d in space.domains.items()}
    study = store.create("mixed", {"space": domains})
    for observation in mixed_observations(space, count):
        trial = store.start_trial(study, space, observation.config, "search")
        store.finish_trial(trial, score=-observation.value, metrics={"v": observation.value})
    return store, study


def test_kept_insight_is_read_back_until_a_trial_is_added(tmp_path: Path) -> None:
    store, study = _study(tmp_path)
    kept = keep_insight(store, study)
    assert kept[0]["knob"] in {"cache", "sched", "threads"} and kept[0]["effect"]

    reopened = StudyStore(store.url)
    record = reopened.find(study.name)
    assert record.attrs["insight"]["knobs"] == kept
    # what is kept is what is shown: mark it, and the mark comes back without a fit
    record.attrs["insight"]["knobs"] = [{"knob": "marked", "share": 1.0, "effect": []}]
    assert knob_insight(record.attrs, reopened.trials(record))[0]["knob"] == "marked"

    space = mixed_space()
    trial = reopened.start_trial(record, space, space.default() or {}, "search")
    reopened.finish_trial(trial, score=-1.0, metrics={"v": 1.0})
    fresh = knob_insight(record.attrs, reopened.trials(record))
    assert [row["knob"] for row in fresh] != ["marked"]
    assert {row["knob"] for row in fresh} == set(space.names)
