"""COCO `bbob-mixint` and `bbob-noisy` problems as tuner tasks, on a grid of knob values.

Knobs take a few evenly spaced values of each variable (integer variables: their integers,
thinned), so the truth of every grid point and the optimum are known exactly:
- bbob-mixint is noise-free: the truth is f(x); the measurement adds 3 % multiplicative noise
  to the value above the grid's best, so the task is as noisy as a quiet server.
- bbob-noisy measures with COCO's own noise; the truth is the median of 31 evaluations
  (COCO's Gaussian noise is multiplicative log-normal, whose median is the noise-free f).
Values are minimised; gaps are relative to the grid's median truth above the optimum, since
f's offset is arbitrary. The default is a fixed grid point that leaves something to search: the
point 1/3 along every axis, or 2/3 along every axis if the first is within 10 % of the
optimum."""

from __future__ import annotations

import itertools
from functools import cache

import numpy as np

from benchmarks.tuners.tasks import Task
from hone.space import Config, Ordinal, SearchSpace

MIXINT = [(1, 5), (10, 5), (21, 5)]  # (function, dimension): sphere, ellipsoid, Gallagher
NOISY = [(101, 2), (104, 2), (122, 2)]  # sphere, Rosenbrock, Schaffer F7 with Gaussian noise
DEFAULT_AT = (1 / 3, 2 / 3)  # fraction along every axis: the first not too close is the default
NOISE_STREAMS = 4096  # starting points of COCO's noise counters a measurement draws from
TOO_CLOSE = 0.10  # a default this near the optimum (as a gap) says nothing about search


class CocoTask(Task):
    def __init__(self, suite: str, function: int, dimension: int, levels: int = 7) -> None:
        import cocoex

        index = function - 100 if suite == "bbob-noisy" else function  # f101 is its 1st
        options = f"dimensions:{dimension} function_indices:{index} instance_indices:1"
        self.problem = next(iter(cocoex.Suite(suite, "", options)))
        integers = self.problem.number_of_integer_variables
        domains = {}
        for i, (low, high) in enumerate(
            zip(self.problem.lower_bounds, self.problem.upper_bounds, strict=True)
        ):
            if i < integers:
                values = np.unique(np.round(np.linspace(low, high, levels)).astype(int))
                domains[f"x{i}"] = Ordinal(tuple(int(v) for v in values))
            else:
                values = np.linspace(low, high, levels)
                domains[f"x{i}"] = Ordinal(tuple(round(float(v), 4) for v in values))
        space = SearchSpace(domains)
        short = suite.replace("bbob-", "")
        super().__init__(f"coco-{short}-f{function}-d{dimension}", space, minimize=True)
        self.noisy = suite == "bbob-noisy"
        grid = [
            dict(zip(domains, v, strict=True))
            for v in itertools.product(*(d.values() for d in domains.values()))
        ]
        for config in grid:
            x = self._vector(config)
            value = (
                float(np.median([self.problem(x) for _ in range(31)]))
                if self.noisy
                else float(self.problem(x))
            )
            self.truths[space.key(config)] = value
        values = np.array(list(self.truths.values()))
        self._scale = float(np.median(values) - values.min()) or 1.0
        space.defaults = self._default()

    def _default(self) -> Config:
        for fraction in DEFAULT_AT:
            config = {
                n: d.values()[round(fraction * (len(d.values()) - 1))]
                for n, d in self.space.domains.items()
            }
            if self.truths[self.space.key(config)] - self.optimum() > TOO_CLOSE * self._scale:
                return config
        raise ValueError(f"{self.name}: every default rule lands within 10 % of the optimum")

    def _vector(self, config: Config) -> np.ndarray:
        return np.array([float(config[n]) for n in self.space.domains])

    def measure(self, config: Config, rng: np.random.Generator) -> float | None:
        if self.noisy:
            _seed_coco_noise(int(rng.integers(NOISE_STREAMS)))
            return float(self.problem(self._vector(config)))
        truth = self.truths[self.space.key(config)]
        base = self.optimum()
        return base + (truth - base) * (1 + 0.03 * rng.normal())

    def truth(self, config: Config) -> float | None:
        return self.truths[self.space.key(config)]

    def scale(self) -> float:
        return self._scale


@cache
def _coco_library():  # type: ignore[no-untyped-def]
    """COCO's loaded extension module itself (its counters), opened once."""
    import ctypes

    from cocoex import interface

    return ctypes.CDLL(interface.__file__)


def _seed_coco_noise(stream: int) -> None:
    """COCO draws its noise from process-wide counters (seed 30, plus one per draw): the draws
    a run got depended on which runs its worker process had done before, so a rerun of the
    same code differed. Each measurement now starts from a counter taken from the run's own
    seeded generator: reruns are the same, and tuners on one seed share their draws."""
    library = _coco_library()
    library.coco_reset_seeds()
    for _ in range(stream):
        library.increase_random_n_seed()  # Gaussian noise's counter
        library.increase_random_seed()  # uniform noise's


def coco_tasks(quick: bool) -> list[Task]:
    chosen = [("bbob-mixint", *MIXINT[0]), ("bbob-noisy", *NOISY[0])]
    if not quick:
        chosen = [("bbob-mixint", *p) for p in MIXINT] + [("bbob-noisy", *p) for p in NOISY]
    return [CocoTask(*c) for c in chosen]
