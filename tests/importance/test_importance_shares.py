"""Knob importance: influential knobs rank above dummies, shares sum to 1, and shrinking a space
keeps the knobs that matter and holds the rest at their defaults."""

from __future__ import annotations

import time

import numpy as np

from hone.importance import importance, shrink, top_knobs
from hone.optimizers import Observation
from hone.space import Categorical, FloatRange, IntRange, Ordinal, SearchSpace


def mixed_space() -> SearchSpace:
    domains = {f"d{i}": FloatRange(0.0, 1.0) for i in range(6)}
    domains["cache"] = Ordinal((1, 2, 4, 8, 16, 32))
    domains["sched"] = Categorical(("cfq", "deadline", "noop"))
    domains["threads"] = IntRange(1, 64)
    defaults = {n: 0.5 for n in domains if n.startswith("d")}
    defaults |= {"cache": 4, "sched": "cfq", "threads": 8}
    return SearchSpace(domains, defaults=defaults)


def mixed_observations(s: SearchSpace, count: int, seed: int = 0) -> list[Observation]:
    rng = np.random.default_rng(seed)
    penalty = {"cfq": 0.0, "deadline": 3.0, "noop": 6.0}
    observations = []
    for _ in range(count):
        c = s.sample(rng)
        value = 8 * (np.log2(c["cache"]) / 5 - 0.7) ** 2 + penalty[c["sched"]]
        value += 5 * ((c["threads"] - 40) / 64) ** 2 + rng.normal(0, 0.1)
        observations.append(Observation(c, float(value)))
    return observations


def test_influential_knobs_rank_above_dummies() -> None:
    s = mixed_space()
    shares = importance(s, mixed_observations(s, 120))
    assert abs(sum(shares.values()) - 1) < 1e-9
    real = min(shares[n] for n in ("cache", "sched", "threads"))
    dummy = max(shares[n] for n in shares if n.startswith("d"))
    assert real > 2 * dummy


def test_fifty_knobs_two_hundred_trials() -> None:
    rng = np.random.default_rng(0)
    s = SearchSpace({f"k{i}": IntRange(0, 100) for i in range(50)})
    observations = []
    for _ in range(200):
        c = s.sample(rng)
        value = (c["k3"] - 50) ** 2 + 0.3 * (c["k7"] - 20) ** 2 + rng.normal(0, 5)
        observations.append(Observation(c, value))
    started = time.perf_counter()
    ranked = top_knobs(s, observations, 2)
    assert time.perf_counter() - started < 5  # loose bound; the figure is in docs/benchmarks.md
    assert ranked == ["k3", "k7"]


def test_shrink_keeps_top_knobs_and_holds_the_rest_at_defaults() -> None:
    s = mixed_space()
    sub, held = shrink(s, mixed_observations(s, 120), 3)
    assert set(sub.names) == {"cache", "sched", "threads"}
    assert held == {f"d{i}": 0.5 for i in range(6)}
    config = sub.sample(np.random.default_rng(1))
    assert s.feasible({**config, **held})


def test_too_few_or_flat_trials_give_nothing() -> None:
    s = mixed_space()
    rng = np.random.default_rng(0)
    flat = [Observation(s.sample(rng), 1.0) for _ in range(10)]
    assert importance(s, flat) == {}
    assert importance(s, mixed_observations(s, 3)) == {}
    failed = [Observation(s.sample(rng), None) for _ in range(10)]
    assert importance(s, failed) == {}
