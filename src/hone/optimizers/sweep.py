"""A-Tune's `abtest` and `traverse`: coordinate sweeps. Starting from the default, try each
knob's grid values with the others held at the best configuration so far, keep the best value,
move to the next knob; repeat the round while budget remains."""

from __future__ import annotations

from hone.optimizers.base import Optimizer, register
from hone.space import Config, SearchSpace


@register
class CoordinateSweep(Optimizer):
    name = "abtest"
    aliases = ("traverse",)

    def __init__(self, space: SearchSpace, **options) -> None:
        super().__init__(space, **options)
        self.points = self.split_count or 5
        self.knob = 0
        self.queue: list[Config] = []

    def _best(self) -> Config:
        return self.recommend() or self.space.default() or self.space.sample(self.rng)

    def ask(self) -> Config:
        first = self.first_config()
        if first is not None:
            return first
        tries = 0
        while not self.queue and tries < len(self.space):
            base = self._best()
            name = self.space.names[self.knob % len(self.space)]
            self.knob += 1
            tries += 1
            domain = self.space.domains[name]
            self.queue = [
                candidate
                for value in domain.grid(self.points)
                if value != base[name] and self.space.feasible(candidate := {**base, name: value})
            ]
        if not self.queue:
            return self.space.sample(self.rng)
        return self.queue.pop(0)
