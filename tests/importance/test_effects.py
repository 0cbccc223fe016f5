"""Effect curves: along a knob that matters the predicted score follows the true response (its
best value where the truth has it), along a dummy it stays flat."""

from __future__ import annotations

import numpy as np

from hone.importance.effects import effect_curves
from hone.space import SearchSpace
from hone.space.domains import FloatRange, IntRange
from tests.importance.test_importance_shares import mixed_observations, mixed_space


def test_curves_follow_the_truth_and_dummies_stay_flat() -> None:
    space = mixed_space()
    observations = mixed_observations(space, 150)
    configs = [o.config for o in observations]
    scores = [-o.value for o in observations]  # higher is better: the truth is minimised
    curves = effect_curves(space, configs, scores, ["sched", "cache", "d0"])
    sched = dict(curves["sched"])
    assert set(sched) == {"cfq", "deadline", "noop"}  # every value of a small domain
    assert sched["cfq"] > sched["deadline"] > sched["noop"]  # penalties 0 < 3 < 6
    cache = dict(curves["cache"])
    assert max(cache, key=cache.get) in (8, 16)  # the truth's best: log2(cache) = 3.5
    span = {k: max(y for _, y in c) - min(y for _, y in c) for k, c in curves.items()}
    assert span["d0"] < span["sched"] / 5  # a knob that does nothing moves little
    assert len(curves["d0"]) == 8  # a continuous range at eight values


def test_every_value_of_a_small_integer_range() -> None:
    # compress's level 1..9 was shown at eight points, without 5 (the winner's level)
    space = SearchSpace({"level": IntRange(1, 9), "d": FloatRange(0.0, 1.0)})
    rng = np.random.default_rng(1)
    configs = [space.sample(rng) for _ in range(30)]
    scores = [10.0 - abs(c["level"] - 5) + c["d"] for c in configs]
    level = dict(effect_curves(space, configs, scores, ["level"])["level"])
    assert sorted(level) == list(range(1, 10))
    assert max(level, key=level.get) in (4, 5, 6)


def test_too_few_trials_give_no_curves() -> None:
    space = mixed_space()
    observations = mixed_observations(space, 3)
    configs = [o.config for o in observations]
    assert effect_curves(space, configs, [1.0, 2.0, 3.0], ["cache"]) == {}
