"""The development / validation split of the suite, drawn once by a seeded generator.

    python -m benchmarks.tuners.split      # (re)writes benchmarks/tuners/split.yaml

Changes to a tuner are judged on the development tasks; the validation tasks are whole systems
held out, so a change fitted to the development tasks shows as a gap between the two sets. The
draw: the tables' systems in sorted order, shuffled by numpy's default_rng(SEED); systems join
validation in that order until validation holds at least a third of the suite's tasks and of
its table systems. A system's tables from both sources and their noise variants stay together,
and so do the tables measured here of a pool system (MEASURED), which join its side after the
draw (they came later and do not change it). The 13 tasks of the suite before the pool tables
were tuned on: they are development."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from benchmarks.tuners.pool import NOISE_LEVELS, POOLS

SEED = 20
SPLIT = Path(__file__).resolve().parent / "split.yaml"
# The suite's tasks before the pool tables (already tuned on), by system.
TUNED_ON = {
    "synthetic": [
        "synthetic-8-knobs-3%",
        "synthetic-16-knobs-6%",
        "synthetic-4-knobs-10%",
        "synthetic-30-knobs-5%",
    ],
    "coco": [
        "coco-mixint-f1-d5",
        "coco-mixint-f10-d5",
        "coco-mixint-f21-d5",
        "coco-noisy-f101-d2",
        "coco-noisy-f104-d2",
        "coco-noisy-f122-d2",
    ],
    "gcc-flags": ["gcc-flags"],
    "memcached": ["memcached"],
    "nginx": ["nginx"],
}
# Tables measured here (tasks/) of systems the pools also hold, by system.
MEASURED = {"postgresql": ["postgresql-15"], "redis": ["redis-7"]}


def pool_index() -> dict[str, dict]:
    """Table name -> its entry in pools/pools.yaml (system, source, objective, direction)."""
    return yaml.safe_load((POOLS / "pools.yaml").read_text())


def draw(tables: dict[str, str], seed: int = SEED) -> list[str]:
    """The validation systems, given table name -> system."""
    systems = sorted(set(tables.values()))
    per_system = {s: sum(v == s for v in tables.values()) * len(NOISE_LEVELS) for s in systems}
    total = sum(per_system.values()) + sum(len(t) for t in TUNED_ON.values())
    chosen, tasks = [], 0
    for system in np.random.default_rng(seed).permutation(systems):
        if 3 * tasks >= total and 3 * len(chosen) >= len(systems):
            break
        chosen.append(str(system))
        tasks += per_system[system]
    return sorted(chosen)


def make_split(seed: int = SEED) -> dict:
    tables = {name: entry["system"] for name, entry in pool_index().items()}
    held_out = draw(tables, seed)
    side = {s: "validation" if s in held_out else "development" for s in set(tables.values())}
    split: dict = {
        "seed": seed,
        "noise": [f"{round(100 * n)}%" for n in NOISE_LEVELS],
        "development": {},
        "validation": {},
    }
    earlier = [t for ts in TUNED_ON.values() for t in ts]
    for name in ("development", "validation"):
        systems = sorted(s for s, v in side.items() if v == name)
        measured = [t for s in systems for t in MEASURED.get(s, [])]
        split[name]["tasks"] = sorted(measured + (earlier if name == "development" else []))
        split[name]["systems"] = systems
        split[name]["tables"] = sorted(t for t, s in tables.items() if side[s] == name)
    return split


def load_split() -> dict:
    return yaml.safe_load(SPLIT.read_text())


def in_set(name: str, task: str, table: str | None = None) -> bool:
    """Whether a task (a pool task: by its table, so every noise variant goes along) is in
    the set `name` (development, validation or all)."""
    if name == "all":
        return True
    side = load_split()[name]
    return task in side.get("tasks", []) or table in side["tables"]


if __name__ == "__main__":
    header = f"# Drawn by `python -m benchmarks.tuners.split` (seed {SEED}); do not edit.\n"
    SPLIT.write_text(header + yaml.safe_dump(make_split(), sort_keys=False))
    print(f"wrote {SPLIT}")
