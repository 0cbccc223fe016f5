"""A-Tune's `gridsearch`: every combination of each knob's grid values (`split_count` points
per numeric range), walked in order; a grid larger than the budget is thinned evenly."""

from __future__ import annotations

import itertools
import math

from hone.optimizers.base import Optimizer, register
from hone.space import Config, SearchSpace


@register
class GridSearch(Optimizer):
    name = "gridsearch"

    def __init__(self, space: SearchSpace, **options) -> None:
        super().__init__(space, **options)
        points = self.split_count or 5
        axes = [domain.grid(points) for _, domain in space]
        total = math.prod(len(axis) for axis in axes)
        wanted = min(total, self.budget or total, 100_000)
        stride = max(1, total // wanted)
        grid = itertools.islice(itertools.product(*axes), 0, None, stride)
        self.queue = [
            config
            for values in itertools.islice(grid, wanted)
            if space.feasible(config := dict(zip(space.names, values, strict=True)))
        ]

    def ask(self) -> Config:
        return self.queue.pop(0) if self.queue else self.space.sample(self.rng)
