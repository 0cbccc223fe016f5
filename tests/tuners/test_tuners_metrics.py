"""The harness's scoring: what a tuner deploys is scored by its truth (a failure region as the
worst), and the report's statistics (evaluations to a gap, the ratio to the best peer, Holm's
correction) are right; every default-suite task starts away from its optimum."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.tuners.__main__ import TASKS, default_gap
from benchmarks.tuners.coco import CocoTask
from benchmarks.tuners.harness import RunResult, run
from benchmarks.tuners.scoring import (
    against_each_peer,
    evals_to_first,
    evals_to_measure,
    evals_to_stay,
    holm,
    ratio,
)
from benchmarks.tuners.tasks import SyntheticTask, default_tasks

INF = float("inf")


def test_evals_to_counts_from_one_and_never_is_infinite() -> None:
    result = RunResult("t", "x", 0, gaps=[0.5, 0.04, 0.015, 0.0], regrets=[1, 0.5, 0.2, 0])
    assert evals_to_stay(result, 0.05) == evals_to_first(result, 0.05) == 2
    assert evals_to_stay(result, 0.02) == evals_to_first(result, 0.02) == 3
    assert evals_to_stay(result, 0.0) == evals_to_first(result, 0.0) == 4
    never = RunResult("t", "x", 0, [INF], [1.0])
    assert evals_to_stay(never, 0.05) == evals_to_first(never, 0.05) == INF


def test_a_lucky_visit_that_is_left_again_does_not_count() -> None:
    """Deploying the luckiest reading: within 2 % at evaluation 2, then away until 5."""
    result = RunResult("t", "x", 0, gaps=[0.3, 0.01, 0.2, 0.2, 0.01, 0.0], regrets=[0] * 6)
    assert evals_to_first(result, 0.02) == 2
    assert evals_to_stay(result, 0.02) == 5
    left = RunResult("t", "x", 0, gaps=[0.3, 0.01, 0.0, 0.2], regrets=[0] * 4)
    assert evals_to_first(left, 0.02) == 2 and evals_to_stay(left, 0.02) == INF


def test_ratio_to_a_peer_and_which_tasks_count() -> None:
    assert ratio(10, 20, 50) == 0.5
    assert ratio(10, INF, 50) == 10 / 51  # only auto gets there
    assert ratio(INF, 7, 50) == INF  # only the peer gets there
    assert ratio(INF, INF, 50) is None  # neither: left out


def test_search_alone_counts_what_was_measured_not_what_is_deployed() -> None:
    """A tuner that measured a configuration within 2 % at evaluation 2 but deploys another."""
    result = RunResult(
        "t", "x", 0, gaps=[0.3, 0.3, 0.3], regrets=[1] * 3, measured=[0.3, 0.01, 0.01]
    )
    assert evals_to_measure(result, 0.02) == 2
    assert evals_to_stay(result, 0.02) == INF


def test_ratios_against_each_peer_alone_within_5_and_2_percent() -> None:
    within_5 = [
        {"auto": 10, "a": 40, "b": 5},
        {"auto": 30, "a": 15, "b": INF},
        {"auto": INF, "a": INF, "b": INF},
    ]
    within_2 = [{"auto": INF, "a": 40, "b": INF}] * 3
    rows = against_each_peer(within_5, within_2, 50)
    # a: 10/40 and 30/15 (the task neither gets to left out); b: 10/5 and 30/51;
    # within 2 %: a gets there on three tasks, auto on none; b never: nothing counted;
    # the best of the others against a: 5/40 and 30/15, against b: 10/5 and 15/51
    assert rows == [
        f"| a | {np.median([0.25, 2.0]):.2f} | 2 | 1 | inf | 3 | 3 | "
        f"{np.median([0.125, 2.0]):.2f} |",
        f"| b | {np.median([2.0, 30 / 51]):.2f} | 2 | 1 | - | 0 | 0 | "
        f"{np.median([2.0, 15 / 51]):.2f} |",
    ]


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


def test_coco_noise_follows_the_runs_seed_not_the_process() -> None:
    """A rerun of one seed gets the same noise whatever ran before it in the process."""
    task = CocoTask("bbob-noisy", 122, 2, levels=5)
    first = run(task, "random", seed=3, budget=10)
    run(task, "random", seed=4, budget=10)  # moves COCO's process-wide counters on
    assert run(task, "random", seed=3, budget=10).regrets == first.regrets
    rng = np.random.default_rng(0)
    readings = [task.measure(task.space.defaults, rng) for _ in range(8)]
    assert len(set(readings)) > 4  # still noisy


def test_coco_defaults_follow_the_rule() -> None:
    """Rosenbrock's point 1/3 along each axis is within 1 % of the optimum: 2/3 instead."""
    task = CocoTask("bbob-noisy", 104, 2)
    assert task.space.defaults == {"x0": 1.6667, "x1": 1.6667}
    sphere = CocoTask("bbob-noisy", 101, 2)
    assert sphere.space.defaults == {"x0": -1.6667, "x1": -1.6667}


@pytest.mark.slow
def test_every_default_suite_task_starts_away_from_its_optimum() -> None:
    """A default within reach of the optimum says nothing about search."""
    tasks = default_tasks(TASKS, quick=False)
    assert len(tasks) == 16  # with the measured redis-7, postgresql-15 and haproxy
    gaps = {t.name: default_gap(t) for t in tasks}
    assert all(gap > 0.10 and not math.isinf(gap) for gap in gaps.values()), gaps
