"""The knob insight (importance and effect curves) kept with a study is what `hone show`, the
report and the web UI read while the study's scored trials are the ones it was fitted on, and is
fitted again once they change. A view that had to fit it keeps it once the study has ended."""

from __future__ import annotations

from pathlib import Path

from hone.space.serialize import domain_to_dict
from hone.storage import StudyStore
from hone.storage.store import FINISHED
from hone.tune.views import keep_insight, knob_insight, viewed_insight
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


def test_the_first_view_of_an_ended_study_keeps_what_it_fitted(tmp_path: Path) -> None:
    """A study ended without an explanation of its winner (--no-why) had nothing kept: every
    `hone show` and report imported scikit-learn and fitted the trees again."""
    store, study = _study(tmp_path)
    running = viewed_insight(store, study, store.trials(study))
    assert "insight" not in store.find(study.name).attrs  # trials may still come
    store.update(study, state=FINISHED)
    record = store.find(study.name)
    shown = viewed_insight(store, record, store.trials(record))
    assert shown == running
    again = StudyStore(store.url).find(study.name)
    assert again.attrs["insight"]["knobs"] == shown
    again.attrs["insight"]["knobs"] = [{"knob": "marked", "share": 1.0, "effect": []}]
    assert viewed_insight(store, again, store.trials(again))[0]["knob"] == "marked"
