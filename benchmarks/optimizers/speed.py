"""Optimiser time per suggestion with many knobs and many trials (targets for `auto`:
<= 50 ms with 30 knobs after 300 trials, <= 0.5 s with 100 knobs after 1000 trials, <= 0.5 s
over a pool of 150,000 configurations of 12 knobs after 100 trials; beside them, 30 knobs after
300 trials of which a fifth failed, which `auto` learns a failure model from).

    python -m benchmarks.optimizers.speed [--engines auto,tpe,random] [--asks 20]

The history is filled with random configurations and values of a smooth function, then the
median time of `ask()` is measured over several calls, each followed by a `tell()`. The pool's
history is the optimiser's own proposals (its first suggestion also reads the pool)."""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from hone.optimizers import make_optimizer
from hone.space import Categorical, FloatRange, IntRange, Ordinal, SearchSpace


def space(knobs: int, pool: int = 0) -> SearchSpace:
    domains = {}
    for i in range(knobs):
        kind = i % 4
        if kind == 0:
            domains[f"k{i}"] = IntRange(1, 4096, log=True)
        elif kind == 1:
            domains[f"k{i}"] = FloatRange(0.0, 1.0)
        elif kind == 2:
            domains[f"k{i}"] = Ordinal((16, 32, 64, 128, 256, 512, 1024))
        else:
            domains[f"k{i}"] = Categorical(("a", "b", "c", "d"))
    free = SearchSpace(domains)
    if not pool:
        return free
    rng, rows = np.random.default_rng(1), {}
    while len(rows) < pool:
        config = free.sample(rng)
        rows.setdefault(free.key(config), config)
    return SearchSpace(domains, candidates=list(rows.values()))


def value(s: SearchSpace, config: dict) -> float:
    return float(np.sum((s.to_unit(config) - 0.3) ** 2))


def measure(
    engine: str, knobs: int, trials: int, asks: int, pool: int = 0, failed: float = 0.0
) -> float:
    """Median seconds per `ask()`; `failed`: the share of trials told as failures."""
    s = space(knobs, pool)
    rng = np.random.default_rng(0)
    optimizer = make_optimizer(engine, s, seed=0, budget=trials + asks)

    def tell(config: dict) -> None:
        optimizer.tell(config, None if failed and rng.random() < failed else value(s, config))

    for _ in range(trials):
        tell(optimizer.ask() if pool else s.sample(rng))
    times = []
    for _ in range(asks):
        started = time.perf_counter()
        config = optimizer.ask()
        times.append(time.perf_counter() - started)
        tell(config)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="auto,tpe,bayes,forest,random")
    parser.add_argument("--asks", type=int, default=15)
    args = parser.parse_args()
    print(
        "| engine | 30 knobs, 300 trials | 100 knobs, 1000 trials | pool of 150,000, 100 trials "
        "| 30 knobs, 300 trials, a fifth failed |"
    )
    print("|---|---|---|---|---|")
    for engine in args.engines.split(","):
        small = measure(engine, 30, 300, args.asks)
        large = measure(engine, 100, 1000, max(3, args.asks // 3))
        pool = failing = None
        if engine == "auto":
            pool = measure(engine, 12, 100, args.asks, pool=150_000)
            failing = measure(engine, 30, 300, args.asks, failed=0.2)
        cells = [f"{small * 1000:.1f} ms", f"{large * 1000:.0f} ms"]
        cells.append(f"{pool * 1000:.0f} ms" if pool is not None else "")
        cells.append(f"{failing * 1000:.1f} ms" if failing is not None else "")
        print(f"| {engine} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
