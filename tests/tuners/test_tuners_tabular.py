"""The tuner harness reads any tabular task in the shared format, failures included, and scores
what a tuner would deploy by the truth."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks.tuners.harness import run
from benchmarks.tuners.tasks import TabularTask

YAML = """\
knobs:
  threads: {type: int, values: [1, 2, 4, 8]}
  mode: {type: categorical, values: [fast, "safe mode"]}
  cache: {type: bool, values: [false, true]}
objective: {metric: ops, direction: maximize}
default: {threads: 2, mode: fast, cache: false}
"""


def write_task(tmp_path: Path) -> Path:
    rows = ["threads,mode,cache,ops,lat,rep,load1"]
    for threads in (1, 2, 4, 8):
        for mode in ("fast", "safe mode"):
            for cache in ("False", "True"):
                for rep in range(2):
                    ops = 100 * threads if threads < 8 else ""  # 8 threads: a cliff
                    if mode == "safe mode":
                        ops = "" if rep == 0 else 10  # fails half the time: still a truth
                    if cache == "True" and ops != "":
                        ops = float(ops) + 5 + rep
                    rows.append(f"{threads},{mode},{cache},{ops},1.0,{rep},0.5")
    (tmp_path / "t.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "t.yaml").write_text(YAML)
    return tmp_path / "t.yaml"


def test_truths_failures_and_noise(tmp_path: Path) -> None:
    task = TabularTask(write_task(tmp_path))
    cfg = {"threads": 4, "mode": "fast", "cache": True}
    assert task.truth(cfg) == 405.5
    assert task.truth({"threads": 8, "mode": "fast", "cache": False}) is None
    assert task.truth({"threads": 2, "mode": "safe mode", "cache": False}) == 10.0  # 1 of 2 fail
    assert task.optimum() == 405.5 and not task.minimize
    rng = np.random.default_rng(0)
    assert {task.measure(cfg, rng) for _ in range(30)} == {405.0, 406.0}
    assert task.space.defaults == {"threads": 2, "mode": "fast", "cache": False}


def test_harness_scores_the_deployed_configuration(tmp_path: Path) -> None:
    task = TabularTask(write_task(tmp_path))
    result = run(task, "auto", seed=0, budget=12)
    assert len(result.regrets) == 12 and len(result.ask_seconds) == 12
    assert all(0.0 <= r <= 1.0 for r in result.regrets)
    assert result.regrets[-1] <= result.regrets[0]
    assert result.gaps[-1] < 0.01  # 16 configurations: auto finds the best within 12


def test_peers_run_past_the_size_of_a_small_grid(tmp_path: Path) -> None:
    """16 configurations, 30 evaluations: SMAC runs out of new configurations and measures its
    incumbent again instead of stopping the run."""
    task = TabularTask(write_task(tmp_path))
    result = run(task, "smac-hpo", seed=0, budget=30)
    assert len(result.regrets) == 30
    assert result.regrets[-1] <= result.regrets[0]
