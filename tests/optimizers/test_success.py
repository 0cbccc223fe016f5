"""`auto`'s model of where configurations fail: its trees, read directly for speed, give what
scikit-learn's own prediction gives, and they are refitted when a failure arrives, not on every
trial."""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist
from sklearn.ensemble import ExtraTreesClassifier

from hone.optimizers.base import Observation
from hone.optimizers.encoding import Encoder
from hone.optimizers.success import TREES, SuccessModel
from hone.space import Categorical, FloatRange, IntRange, SearchSpace

SPACE = SearchSpace(
    {
        "threads": IntRange(1, 64),
        "ratio": FloatRange(0.0, 1.0),
        "mode": Categorical(("fast", "safe", "off")),
    }
)


def history(n: int, seed: int = 0) -> list[Observation]:
    """Random trials that fail past 48 threads with ratio over a half, and in mode off."""
    rng = np.random.default_rng(seed)
    trials = []
    for _ in range(n):
        config = SPACE.sample(rng)
        fails = (config["threads"] > 48 and config["ratio"] > 0.5) or config["mode"] == "off"
        trials.append(Observation(config, None if fails else float(rng.random())))
    return trials


def test_the_probability_is_what_scikit_learn_predicts() -> None:
    encoder = Encoder(SPACE)
    trials = history(120)
    success = SuccessModel(encoder, seed=3)(trials)
    candidates = encoder.units([SPACE.sample(np.random.default_rng(9)) for _ in range(500)])

    seen = encoder.encode([o.config for o in trials])
    labels = np.array([o.value is not None for o in trials])
    reference = ExtraTreesClassifier(n_estimators=TREES, min_samples_leaf=2, random_state=3)
    reference.fit(seen, labels)
    x = encoder.features(candidates)
    trees = reference.predict_proba(x)[:, list(reference.classes_).index(True)]
    distance = cdist(x, seen)
    to_success, to_failure = distance[:, labels].min(axis=1), distance[:, ~labels].min(axis=1)
    expected = (trees + to_failure / (to_failure + to_success)) / 2

    assert np.allclose(success(candidates), expected, atol=1e-9)
    off = encoder.units([{"threads": 8, "ratio": 0.2, "mode": "off"}])
    assert (
        success(off)[0]
        < 0.5
        < success(encoder.units([{"threads": 8, "ratio": 0.2, "mode": "fast"}]))[0]
    )


def test_trees_are_refitted_when_a_failure_arrives_not_on_every_success() -> None:
    model = SuccessModel(Encoder(SPACE), seed=0)
    trials = history(100)
    model(trials)
    fitted = model.trees
    ok = Observation({"threads": 4, "ratio": 0.1, "mode": "fast"}, 1.0)
    model([*trials, ok])
    assert model.trees is fitted  # one more success: the same trees
    fail = Observation({"threads": 60, "ratio": 0.9, "mode": "fast"}, None)
    model([*trials, ok, fail])
    assert model.trees is not fitted
    refreshed = model.trees
    model([*trials, ok, fail, *[ok] * 5])
    assert model.trees is refreshed
    model([*trials, ok, fail, *[ok] * 12])  # a tenth more trials: refitted without a failure
    assert model.trees is not refreshed


def test_without_failures_every_candidate_runs() -> None:
    encoder = Encoder(SPACE)
    trials = [o for o in history(60) if o.value is not None]
    success = SuccessModel(encoder, seed=0)(trials)
    assert (success(encoder.units([SPACE.sample(np.random.default_rng(1))])) == 1.0).all()
