"""Which tasks a run of the benchmark takes: the suite's tasks, one set of the split, or the
PromiseTune protocol's systems.

The default suite takes about half an hour on two cores at budget 100 (scikit-optimize's GP
alone costs 45-165 CPU s per run there, 84 % of the whole): 6 of the 13 tasks tuned on
before the split (the `--quick` ones: the 8-knob synthetic task, 2 COCO problems, the 3 measured
tables), the 2 tables measured since (redis, PostgreSQL: validation, also in `--quick`) and one
table per pool system (its PromiseTune table if it has one, else its first by name), each table
at one noise level by rotation over the tables in name order (noise-free, 3 %, 10 %, ...).
`full` takes all 15 and every table at every noise level."""

from __future__ import annotations

from pathlib import Path

from benchmarks.tuners.pool import NOISE_LEVELS, POOLS, PoolTask, pool_tasks
from benchmarks.tuners.split import in_set, load_split, pool_index
from benchmarks.tuners.tabular_io import task_name
from benchmarks.tuners.tasks import Task, default_tasks

PROMISETUNE = "ideas-labo/PromiseTune"
HOLDOUT = Path(__file__).resolve().parent / "holdout"


def suite_tasks(tasks_dir: Path, quick: bool, full: bool, name: str = "all") -> list[Task]:
    tasks = [t for t in default_tasks(tasks_dir, not full) if in_set(name, t.name)]
    for table, noise in suite_tables(quick, full, name):
        tasks += pool_tasks([table], (noise,))
    return tasks


def suite_tables(quick: bool, full: bool, name: str = "all") -> list[tuple[str, float]]:
    """The pool tables of a run and the noise level of each."""
    index = pool_index()
    tables = sorted(index, key=str.lower)
    if not full:
        tables = [t for t in tables if t in _representatives(index)]
    if quick:  # two systems of each side
        split = load_split()
        tables = [
            t for side in ("development", "validation") for t in _first(tables, split[side], 2)
        ]
    chosen = []
    for i, table in enumerate(tables):
        if in_set(name, table, table):
            levels = NOISE_LEVELS if full else (NOISE_LEVELS[i % len(NOISE_LEVELS)],)
            chosen += [(table, noise) for noise in levels]
    return chosen


def _first(tables: list[str], side: dict, count: int) -> list[str]:
    return [t for t in tables if t in side["tables"]][:count]


def _representatives(index: dict[str, dict]) -> set[str]:
    """One table per system: its PromiseTune table, else the first by name."""
    chosen: dict[str, str] = {}
    for table in sorted(index, key=lambda t: (PROMISETUNE not in index[t]["source"], t.lower())):
        chosen.setdefault(index[table]["system"], table)
    return set(chosen.values())


def promisetune_tasks() -> list[PoolTask]:
    """PromiseTune's systems (its tables), noise-free, as its protocol runs them."""
    index = pool_index()
    return pool_tasks(
        sorted((t for t in index if PROMISETUNE in index[t]["source"]), key=str.lower), (0.0,)
    )


def holdout_tables() -> list[Path]:
    """The held-out systems' tables (holdout/README.md): in no set of the split."""
    return sorted(HOLDOUT.glob("*.csv.gz"), key=lambda p: p.name.lower())


def named_tasks(tasks_dir: Path, names: list[str]) -> dict[str, Task]:
    """The tasks of these names among every variant of the suite and the held-out systems,
    by name -> task. A table is read only when one of its tasks is named: building all of
    them to find a saved run's few took half a minute."""
    index = pool_index()
    held_out = {task_name(p): p for p in holdout_tables()}
    pooled: dict[float, list[str]] = {}  # noise level -> the suite's tables named at it
    found: dict[str, Task] = {}
    for name in names:
        for table, noise in _name_readings(name):
            if table in index:
                pooled.setdefault(noise, []).append(table)
            elif table in held_out:
                found[name] = path_tasks([held_out[table]], (noise,))[0]
    for noise, tables in pooled.items():  # pools.yaml read once a level, not once a task
        found |= {t.name: t for t in pool_tasks(tables, (noise,))}
    if not set(names) <= found.keys():  # the synthetic, COCO and measured tasks
        rest = [t for t in default_tasks(tasks_dir, False, names) if t.name in names]
        found |= {t.name: t for t in rest if t.name not in found}
    return found


def _name_readings(name: str) -> list[tuple[str, float]]:
    """The (table, noise) pairs a pool task's name can stand for (`SS-A-3%`: SS-A at 3 %)."""
    pairs = [(name, 0.0)]
    for noise in NOISE_LEVELS[1:]:
        suffix = f"-{round(100 * noise)}%"
        if name.endswith(suffix):
            pairs.append((name[: -len(suffix)], noise))
    return pairs


def path_tasks(paths: list[Path], noise_levels=NOISE_LEVELS) -> list[Task]:
    """Tasks given by path: a tabular task (.yaml, or the .csv beside it) or a pool table
    (.csv, .csv.gz)."""
    from benchmarks.tuners.tasks import TabularTask

    index = pool_index()
    tasks: list[Task] = []
    for path in paths:
        # a tabular task's table given for its YAML: read as a pool table it was "no
        # objective column ($<NAME, NAME+ or NAME-)", a convention of the pools' sources
        spec = [path.with_suffix(s) for s in (".yaml", ".yml")] if path.suffix == ".csv" else []
        path = next((p for p in spec if p.is_file()), path)
        if path.suffix in (".yaml", ".yml"):
            tasks.append(TabularTask(path))
            continue
        # one of the suite's tables keeps its system and direction (pools/pools.yaml)
        entry = index.get(task_name(path), {})
        tasks += [
            PoolTask(path, noise, entry.get("system"), entry.get("minimise"))
            for noise in noise_levels
        ]
    return tasks


__all__ = [
    "POOLS",
    "holdout_tables",
    "named_tasks",
    "path_tasks",
    "promisetune_tasks",
    "suite_tasks",
]
