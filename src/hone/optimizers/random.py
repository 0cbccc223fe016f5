"""Uniform random search: the baseline every other optimiser must beat."""

from __future__ import annotations

from hone.optimizers.base import Optimizer, register
from hone.space import Config


@register
class RandomSearch(Optimizer):
    name = "random"

    def ask(self) -> Config:
        return self.first_config() or self.space.sample(self.rng)
