"""A-Tune's `gridsearch`: every combination of each knob's grid values (`split_count` points
per numeric range), walked in order; a grid larger than the budget is thinned evenly."""

from __future__ import annotations

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
        grid = (_nth(axes, k * stride) for k in range(wanted))
        self.queue = [
            config
            for values in grid
            if space.feasible(config := dict(zip(space.names, values, strict=True)))
        ]

    def ask(self) -> Config:
        return self.queue.pop(0) if self.queue else self.space.sample(self.rng)


def _nth(axes: list[list], index: int) -> list:
    """The index-th combination in itertools.product order, computed rather than walked to:
    30 knobs of 5 points are 5^30 combinations, and walking them never ends."""
    values = []
    for axis in reversed(axes):
        index, digit = divmod(index, len(axis))
        values.append(axis[digit])
    return values[::-1]
