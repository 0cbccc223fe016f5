"""A-Tune's `gbrt` engine: gradient-boosted trees; quantile models at 16 % and 84 % give the
spread, as scikit-optimize's GBRT does."""

from __future__ import annotations

from sklearn.ensemble import GradientBoostingRegressor

from hone.optimizers.base import register
from hone.optimizers.surrogate import SurrogateOptimizer


@register
class GBRT(SurrogateOptimizer):
    name = "gbrt"

    def fit_predict(self, x, y, candidates):
        predictions = []
        for alpha in (0.16, 0.5, 0.84):
            model = GradientBoostingRegressor(
                loss="quantile", alpha=alpha, n_estimators=40, random_state=self.seed
            )
            predictions.append(model.fit(x, y).predict(candidates))
        low, mid, high = predictions
        return mid, abs(high - low) / 2
