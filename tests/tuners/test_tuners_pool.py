"""Pool tasks: a sampled table whose rows are the only measurable configurations, every
tuner's proposal resolved to a row by one rule; and the fixed development/validation split."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
import yaml

from benchmarks.tuners.__main__ import TASKS
from benchmarks.tuners.harness import run
from benchmarks.tuners.pool import POOLS, PoolTask
from benchmarks.tuners.promisetune import PUBLISHED, best_found
from benchmarks.tuners.split import (
    MEASURED,
    TUNED_ON,
    in_set,
    load_split,
    make_split,
    pool_index,
)
from benchmarks.tuners.suite import holdout_tables, path_tasks, suite_tables, suite_tasks
from benchmarks.tuners.tabular_io import TaskError

# moot's convention: objectives end in + (maximise) or - (minimise); the first one counts.
MOOT = """\
root,threads,mode,buffer,ops+,latency-
1,1,fast,4,100,9
1,2,fast,8,150,7
1,4,safe,16,210,5
1,8,safe,32,190,6
1,8,safe,32,230,6
1,1,safe,32,120,8
"""


def write(tmp_path: Path, text: str, name: str = "table.csv.gz") -> Path:
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()))
    return path


def test_a_table_loads_by_path_with_its_first_objective_and_direction(tmp_path: Path) -> None:
    task = PoolTask(write(tmp_path, MOOT))
    assert task.name == "table" and not task.minimize and task.table.objective == "ops"
    assert list(task.space.domains) == ["threads", "mode", "buffer"]  # root is constant
    assert len(task.space.candidates) == 5  # the repeated configuration is one candidate
    assert task.truth({"threads": 8, "mode": "safe", "buffer": 32}) == 210.0  # its rows' mean
    assert task.optimum() == 210.0
    promise = "a,b,$<perf\n0,1,3.0\n1,1,2.0\n1,0,4.0\n"
    task = PoolTask(write(tmp_path, promise, "p.csv.gz"))
    assert task.minimize and task.optimum() == 2.0 and task.table.objective == "perf"
    # the default is the table's median configuration
    assert task.truth(task.space.defaults) == 3.0


def test_rows_with_an_unknown_cell_are_left_out_and_a_bad_one_is_one_line(
    tmp_path: Path,
) -> None:
    """moot writes an unknown value as `?`: such a row is no configuration a tuner can run.
    A reading that is not a number, a short row, a file that is not there or not gzip: one
    line naming the file (and line and column), never a traceback; so is a table with one
    configuration (nothing to tune)."""
    text = MOOT + "1,?,fast,4,900,1\n1,2,safe,8,?,1\n1,2,safe,4,,1\n"
    task = PoolTask(write(tmp_path, text))
    assert task.optimum() == 210.0 and len(task.space.candidates) == 5
    assert all(isinstance(c["threads"], int) for c in task.space.candidates)  # still numbers
    bad = {
        "n.csv": (MOOT + "1,2,fast,4,fast,1\n", "n.csv:8: ops+: 'fast' is not a number"),
        "s.csv": (MOOT + "1,2,fast\n", "s.csv:8: 3 cells where the header has 6"),
        "o.csv": ("a,b\n1,2\n", "o.csv:1: no objective column"),
        # one configuration, alone or repeated: was a ValueError traceback from zip()
        "one.csv": ("a,b,$<t\n1,x,5\n", "one.csv: no knob column takes two values"),
        "c.csv": ("a,b,$<t\n1,x,5\n1,x,6\n", "c.csv: no knob column takes two values"),
        "z.csv.gz": (None, "z.csv.gz: not a whole gzip file"),
        "missing.csv": (None, "missing.csv: cannot read: No such file or directory"),
    }
    for name, (content, message) in bad.items():
        path = tmp_path / name
        if name.endswith(".gz"):
            path.write_bytes(gzip.compress(MOOT.encode())[:20])
        elif content is not None:
            path.write_text(content)
        with pytest.raises(TaskError) as error:
            path_tasks([path])
        assert message in str(error.value) and str(tmp_path) in str(error.value)


def test_a_proposal_resolves_to_the_nearest_row_ties_to_the_first(tmp_path: Path) -> None:
    task = PoolTask(write(tmp_path, MOOT))
    # an exact row is itself
    assert task.resolve({"threads": 2, "mode": "fast", "buffer": 8})["buffer"] == 8
    # threads 4 -> (8, safe, 32): |2/3 - 1| + 0 + 0 = 1/3; (4, safe, 16): 0 + 0 + 1/3 = 1/3:
    # a tie, and (4, safe, 16) comes first in the table
    row = task.resolve({"threads": 4, "mode": "safe", "buffer": 32})
    assert row == {"threads": 4, "mode": "safe", "buffer": 16}
    # a categorical mismatch costs 1: (1, fast, 32) is 2/3 (buffer) from (1, fast, 4)
    # and 1 (mode) from (1, safe, 32)
    row = task.resolve({"threads": 1, "mode": "fast", "buffer": 32})
    assert row == {"threads": 1, "mode": "fast", "buffer": 4}


def test_the_vectorised_rule_agrees_with_a_plain_loop_on_a_large_pool(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    rows = rng.integers(0, 9, size=(20_000, 6))
    body = "\n".join(",".join(map(str, r)) + f",c{r[0] % 3},{i}" for i, r in enumerate(rows))
    task = PoolTask(write(tmp_path, "a,b,c,d,e,f,g,y-\n" + body + "\n"))
    positions = np.array(
        [[task.space.domains[n].to_unit(c[n]) for n in "abcdef"] for c in task.table.configs]
    )
    codes = np.array([c["g"] for c in task.table.configs])
    for _ in range(20):
        proposal = task.space.sample(rng)
        point = np.array([task.space.domains[n].to_unit(proposal[n]) for n in "abcdef"])
        distance = np.round(np.abs(positions - point).sum(axis=1) + (codes != proposal["g"]), 9)
        assert task.row(proposal) == int(np.flatnonzero(distance == distance.min())[0])


def test_noise_is_multiplicative_seeded_and_absent_in_the_noise_free_variant(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, MOOT)
    quiet, noisy = PoolTask(path), PoolTask(path, noise=0.10)
    assert noisy.name == "table-10%"
    config = {"threads": 4, "mode": "safe", "buffer": 16}
    rng = np.random.default_rng(0)
    assert {quiet.measure(config, rng) for _ in range(20)} == {210.0}
    draws = np.array([noisy.measure(config, np.random.default_rng(s)) for s in range(3000)])
    assert abs(draws.mean() / 210.0 - 1) < 0.01 and abs(draws.std() / 210.0 - 0.10) < 0.01
    again = [noisy.measure(config, np.random.default_rng(s)) for s in range(5)]
    assert again == list(draws[:5])  # the run's seed decides the draws


def test_a_tuner_runs_on_a_pool_and_is_scored_by_the_resolved_rows(tmp_path: Path) -> None:
    task = PoolTask(write(tmp_path, MOOT))
    result = run(task, "optuna-tpe", seed=0, budget=12)
    assert len(result.gaps) == 12 and all(np.isfinite(result.gaps))
    assert min(result.measured) == 0.0  # 5 rows, 12 evaluations: the best row was measured


def test_the_split_is_the_committed_draw_whole_systems_a_third_held_out() -> None:
    split = load_split()
    drawn = make_split(split["seed"])
    assert {k: split[k] for k in drawn} == drawn  # the committed file is what the code draws
    development, validation = split["development"], split["validation"]
    assert not set(development["systems"]) & set(validation["systems"])
    index = pool_index()
    assert sorted(development["tables"] + validation["tables"]) == sorted(index)
    for side in (development, validation):
        assert {index[t]["system"] for t in side["tables"]} == set(side["systems"])

    # the tasks tuned on before the split are development; a table measured here goes with
    # its system (redis and PostgreSQL are held out)
    def measured(side: dict) -> list[str]:
        return [t for s in side["systems"] for t in MEASURED.get(s, [])]

    earlier = [t for ts in TUNED_ON.values() for t in ts]
    assert development["tasks"] == sorted(earlier + measured(development))
    assert validation["tasks"] == measured(validation) == ["postgresql-15", "redis-7"]
    assert all((TASKS / f"{t}.yaml").exists() for ts in MEASURED.values() for t in ts)
    noise = len(split["noise"])
    held = noise * len(validation["tables"]) + len(validation["tasks"])
    total = held + noise * len(development["tables"]) + len(development["tasks"])
    assert 3 * held >= total
    systems = len(development["systems"]) + len(validation["systems"])
    assert 3 * len(validation["systems"]) >= systems
    assert all((POOLS / f"{t}.csv.gz").exists() for t in index)


def test_the_held_out_systems_are_new_systems_at_every_noise_level() -> None:
    """--set holdout: tables of systems in neither side of the split, each noise-free and at
    3 % and 10 %."""
    tables = holdout_tables()
    assert len(tables) == 8
    tasks = path_tasks(tables)
    assert len(tasks) == 3 * len(tables)
    assert {t.noise for t in tasks} == {0.0, 0.03, 0.10}
    split = load_split()
    systems = set(split["development"]["systems"]) | set(split["validation"]["systems"])
    for task in tasks:
        assert task.system not in systems
        assert not in_set("development", task.name, task.table.name)
        assert not in_set("validation", task.name, task.table.name)


def test_a_set_holds_its_side_of_the_split_with_each_table_at_one_noise_level() -> None:
    split, index = load_split(), pool_index()
    tables = {name: suite_tables(False, False, name) for name in ("development", "validation")}
    assert {t for t, _ in tables["validation"]} <= set(split["validation"]["tables"])
    assert {t for t, _ in tables["development"]} <= set(split["development"]["tables"])
    every = suite_tables(False, False)
    assert sorted(every) == sorted(tables["development"] + tables["validation"])
    # one table per system, each at one noise level, all three levels used
    systems = {e["system"] for e in index.values()}
    assert len({index[t]["system"] for t, _ in every}) == len(every) == len(systems)
    assert {n for _, n in every} == {0.0, 0.03, 0.10}
    assert len(suite_tables(False, True)) == 3 * len(index)  # --full: every variant
    assert in_set("validation", "storm-3%", "storm") and not in_set("development", "x", "storm")
    assert in_set("validation", "redis-7") and not in_set("development", "redis-7")
    # the tables measured here of held-out systems run with validation, --quick included
    quick = {t.name for t in suite_tasks(TASKS, True, False, "validation")}
    assert {"redis-7", "postgresql-15"} <= quick


def test_promisetunes_protocol_starts_cold_and_scores_the_best_value_found(
    tmp_path: Path,
) -> None:
    task = PoolTask(write(tmp_path, MOOT))
    result = run(task, "random", seed=2, budget=6, baseline=False)
    found = [best_found(task, result, b) for b in range(1, 7)]
    assert found == sorted(found)  # maximised: it only grows
    assert found[0] in set(task.values) and found[-1] <= task.optimum()
    published = yaml.safe_load(PUBLISHED.read_text())
    assert published["tuners"]["PromiseTune"]["7z"]["runs"] == 30


def test_a_suite_table_given_by_path_keeps_its_system_and_direction() -> None:
    """PromiseTune's storm table declares its throughput minimised; PromiseTune maximised it."""
    storm = path_tasks([POOLS / "storm.csv.gz"], (0.0,))[0]
    assert isinstance(storm, PoolTask) and not storm.minimize and storm.system == "storm"
    assert PoolTask(POOLS / "storm.csv.gz").minimize  # as the file declares it
