"""A-Tune's `forest` engine: a random-forest surrogate; the spread of its trees is the
uncertainty."""

from __future__ import annotations

import numpy as np
from sklearn.ensemble import RandomForestRegressor

from hone.optimizers.base import register
from hone.optimizers.surrogate import SurrogateOptimizer


def tree_spread(model, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    per_tree = np.stack([tree.predict(candidates) for tree in model.estimators_])
    return per_tree.mean(axis=0), per_tree.std(axis=0)


@register
class Forest(SurrogateOptimizer):
    name = "forest"

    def fit_predict(self, x, y, candidates):
        model = RandomForestRegressor(n_estimators=60, min_samples_leaf=1, random_state=self.seed)
        model.fit(x, y)
        return tree_spread(model, candidates)
