"""Model-based search: fit a surrogate of the objective to the measurements, then measure the
candidate with the largest expected improvement. A-Tune's model engines (bayes, gbrt, forest,
extraTrees) are this loop with different surrogates; each is one small file."""

from __future__ import annotations

from abc import abstractmethod

import numpy as np
from scipy.special import ndtr

from hone.optimizers.base import Optimizer
from hone.optimizers.designs import latin_hypercube
from hone.optimizers.encoding import (
    Encoder,
    first_feasible,
    fresh_candidates,
    neighbours,
    row_keys,
)
from hone.space import Config, SearchSpace


def expected_improvement(mean: np.ndarray, std: np.ndarray, best: float) -> np.ndarray:
    """Expected amount by which each candidate falls below `best` (we minimise)."""
    std = np.maximum(std, 1e-12)
    gap = best - mean
    z = gap / std
    # ndtr and the density written out: scipy.stats.norm costs ~0.1 ms per call in overhead.
    return gap * ndtr(z) + std * np.exp(-0.5 * z**2) / np.sqrt(2 * np.pi)


class SurrogateOptimizer(Optimizer):
    """Space-filling start, then expected improvement under a fitted surrogate."""

    candidates = 1024

    def __init__(self, space: SearchSpace, **options) -> None:
        super().__init__(space, **options)
        self.encoder = Encoder(space)
        starts = self.random_starts or max(5, min(10, len(space) + 1))
        self.design = latin_hypercube(space, starts, self.rng)

    @abstractmethod
    def fit_predict(
        self, x: np.ndarray, y: np.ndarray, candidates: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Fit on (x, y) and return the mean and spread predicted at the candidates."""

    def ask(self) -> Config:
        first = self.first_config()
        if first is not None:
            return first
        done = [o for o in self.history if o.value is not None]
        if self.design and len(done) < len(self.design) + 1:
            return self.design.pop(0)
        if len(done) < 2:
            return self.space.sample(self.rng)
        seen = set(row_keys(self.encoder.units([o.config for o in self.history])))
        best = sorted(done, key=lambda o: o.value)[:3]
        parts = [self.rng.random((self.candidates // 2, self.encoder.dims))]
        for row in self.encoder.units([o.config for o in best]):
            parts.append(neighbours(self.encoder, row, self.rng, self.candidates // 6, 0.15))
        pool = fresh_candidates(self.encoder.snap(np.vstack(parts)), seen)
        if not len(pool):
            return self.space.sample(self.rng)
        x = self.encoder.encode([o.config for o in done])
        y = np.array([o.value for o in done], dtype=float)
        mean, std = self.fit_predict(x, y, self.encoder.features(pool))
        gain = expected_improvement(mean, std, float(y.min()))
        return first_feasible(self.encoder, pool, np.argsort(-gain)) or self.space.sample(self.rng)
