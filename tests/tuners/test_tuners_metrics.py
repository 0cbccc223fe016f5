"""The harness's scoring: what a tuner deploys is scored by its truth (a failure region as the
worst), and the report's statistics (evaluations to a gap, Holm's correction) are right."""

from __future__ import annotations

import numpy as np

from benchmarks.tuners.__main__ import evals_to, holm
from benchmarks.tuners.coco import CocoTask
from benchmarks.tuners.harness import RunResult, run
from benchmarks.tuners.tasks import SyntheticTask


def test_evals_to_counts_from_one_and_never_is_infinite() -> None:
    result = RunResult("t", "x", 0, gaps=[0.5, 0.04, 0.015, 0.0], regrets=[1, 0.5, 0.2, 0])
    assert evals_to(result, 0.05) == 2
    assert evals_to(result, 0.02) == 3
    assert evals_to(result, 0.0) == 4
    assert evals_to(RunResult("t", "x", 0, [float("inf")], [1.0]), 0.05) == float("inf")


def test_holm_is_step_down_and_monotone() -> None:
    adjusted = holm({"a": 0.01, "b": 0.04, "c": 0.03})
    assert adjusted["a"] == 0.03  # 3 x 0.01
    assert adjusted["c"] == 0.06  # 2 x 0.03
    assert adjusted["b"] == 0.06  # max(1 x 0.04, the previous)
    assert holm({"a": 0.9, "b": 0.8}) == {"b": 1.0, "a": 1.0}


class Stubborn:
    """Deploys one fixed configuration whatever it measures."""

    def __init__(self, config) -> None:
        self.config = config

    def ask(self):
        return self.config

    def tell(self, config, value) -> None:
        pass

    def recommend(self):
        return self.config


def test_a_failure_region_scores_as_the_worst(monkeypatch) -> None:
    task = SyntheticTask("s", 4, 0.05, seed=3)
    rng = np.random.default_rng(0)
    failing = next(
        c for c in (task.space.sample(rng) for _ in range(20000)) if task.truth(c) is None
    )
    from benchmarks.tuners import harness

    monkeypatch.setitem(harness.TUNERS, "stubborn", lambda space, seed, budget: Stubborn(failing))
    result = run(task, "stubborn", seed=0, budget=5)
    assert result.regrets == [1.0] * 5 and result.gaps == [float("inf")] * 5


def test_scores_use_the_truth_not_the_noisy_reading() -> None:
    task = SyntheticTask("s", 4, 0.10, seed=3)
    result = run(task, "random", seed=1, budget=20)
    truth_best = task.optimum()
    assert all(g >= 0 for g in result.gaps)
    assert all(0 <= r <= 1 for r in result.regrets)
    assert truth_best > 0 and len(result.ask_seconds) == 20


def test_coco_tasks_know_their_optimum() -> None:
    task = CocoTask("bbob-noisy", 101, 2, levels=5)
    assert len(task.truths) == 25
    best = min(task.truths, key=task.truths.get)
    config = dict(zip(task.space.domains, best, strict=True))
    assert task.optimum() == min(task.truths.values()) and task.scale() > 0
    assert task.truth(config) == task.optimum()
    rng = np.random.default_rng(0)
    readings = {task.measure(task.space.defaults, rng) for _ in range(5)}
    assert len(readings) > 1  # COCO's own noise
