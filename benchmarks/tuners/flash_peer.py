"""FLASH, the published algorithm (Nair, Menzies, Siegmund, Apel: "Finding Faster
Configurations using FLASH", IEEE TSE 2018), written here from the paper.

FLASH is pool-based sequential model-based optimisation: measure a random sample of the
configurations, then repeatedly fit a CART regression tree on everything measured, predict every
configuration not yet measured, and measure the one with the best prediction (its single-
objective acquisition is the predicted mean alone, no uncertainty). It deploys the best
configuration measured. The pool is the table's rows on pool tasks; elsewhere a random sample
of the space (the paper's systems were sampled tables too), of POOL configurations."""

from __future__ import annotations

import numpy as np
from sklearn.tree import DecisionTreeRegressor

from hone.space import Config, SearchSpace

INITIAL = 30  # the paper's initial random sample
POOL = 10_000  # configurations sampled when the space is not a finite pool


class Flash:
    def __init__(self, space: SearchSpace, seed: int, budget: int) -> None:
        self.space = space
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.pool = space.candidates or _sample(space, self.rng)
        self.units = np.array([space.to_unit(c) for c in self.pool])
        self.index = {space.key(c): i for i, c in enumerate(self.pool)}
        self.start = list(self.rng.permutation(len(self.pool))[: min(INITIAL, budget // 3 or 1)])
        self.measured: set[int] = set()
        self.x: list[np.ndarray] = []
        self.y: list[float] = []
        self.best: tuple[float, Config] | None = None

    def ask(self) -> Config:
        while self.start:
            row = int(self.start.pop(0))
            if row not in self.measured:
                return dict(self.pool[row])
        left = np.array([i for i in range(len(self.pool)) if i not in self.measured])
        if not len(left):  # every configuration measured
            return dict(self.pool[int(self.rng.integers(len(self.pool)))])
        if not self.y:
            return dict(self.pool[int(self.rng.choice(left))])
        tree = DecisionTreeRegressor(random_state=self.seed).fit(np.array(self.x), self.y)
        predicted = tree.predict(self.units[left])
        return dict(self.pool[int(left[int(np.argmin(predicted))])])

    def tell(self, config: Config, value: float | None) -> None:
        row = self.index.get(self.space.key(config))
        if row is not None:
            self.measured.add(row)
        if value is None:  # FLASH has no failure model: a failed configuration is skipped
            return
        self.x.append(self.space.to_unit(config))
        self.y.append(value)
        if self.best is None or value < self.best[0]:
            self.best = (value, dict(config))

    def recommend(self) -> Config | None:
        return self.best[1] if self.best else None


def _sample(space: SearchSpace, rng: np.random.Generator) -> list[Config]:
    """Up to POOL distinct random configurations (fewer when the space is smaller)."""
    found: dict[tuple, Config] = {}
    for _ in range(3 * POOL):
        config = space.sample(rng)
        found.setdefault(space.key(config), config)
        if len(found) == POOL:
            break
    return list(found.values())
