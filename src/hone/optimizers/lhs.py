"""A-Tune's `lhs` engine: a Latin hypercube over the budget, then random search."""

from __future__ import annotations

from hone.optimizers.base import Optimizer, register
from hone.optimizers.designs import latin_hypercube
from hone.space import Config, SearchSpace


@register
class LatinHypercube(Optimizer):
    name = "lhs"

    def __init__(self, space: SearchSpace, **options) -> None:
        super().__init__(space, **options)
        size = self.budget or self.split_count or 10
        self.design = latin_hypercube(space, size, self.rng)

    def ask(self) -> Config:
        first = self.first_config()
        if first is not None:
            return first
        return self.design.pop(0) if self.design else self.space.sample(self.rng)
