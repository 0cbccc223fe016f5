"""Knob importance time for 50 knobs x 200 trials (target: well under a second; A-Tune's wefs
selector took 328 s for 12 samples).

    python -m benchmarks.optimizers.importance_speed [--repeats 7]

Prints the median wall time of `importance` and of `shrink` to the top 10 knobs."""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from hone.importance import importance, shrink
from hone.optimizers import Observation
from hone.space import IntRange, SearchSpace


def observations(knobs: int, trials: int) -> tuple[SearchSpace, list[Observation]]:
    space = SearchSpace(
        {f"k{i}": IntRange(0, 100) for i in range(knobs)},
        defaults={f"k{i}": 50 for i in range(knobs)},
    )
    rng = np.random.default_rng(0)
    result = []
    for _ in range(trials):
        config = space.sample(rng)
        value = sum((config[f"k{i}"] - 30) ** 2 / (i + 1) for i in range(5)) + rng.normal(0, 5)
        result.append(Observation(config, float(value)))
    return space, result


def median_time(call, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    space, trials = observations(50, 200)
    took = median_time(lambda: importance(space, trials), args.repeats)
    shrunk = median_time(lambda: shrink(space, trials, 10), args.repeats)
    print(f"importance, 50 knobs x 200 trials: {took * 1000:.0f} ms (median of {args.repeats})")
    print(f"shrink to top 10, 50 knobs x 200 trials: {shrunk * 1000:.0f} ms")


if __name__ == "__main__":
    main()
