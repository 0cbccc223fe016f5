"""A-Tune's `extraTrees` engine: extremely randomised trees as the surrogate."""

from __future__ import annotations

from sklearn.ensemble import ExtraTreesRegressor

from hone.optimizers.base import register
from hone.optimizers.forest import tree_spread
from hone.optimizers.surrogate import SurrogateOptimizer


@register
class ExtraTrees(SurrogateOptimizer):
    name = "extraTrees"

    def fit_predict(self, x, y, candidates):
        model = ExtraTreesRegressor(n_estimators=60, random_state=self.seed)
        model.fit(x, y)
        return tree_spread(model, candidates)
