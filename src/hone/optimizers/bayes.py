"""A-Tune's `bayes` engine: a Gaussian-process surrogate (Matern 5/2 plus noise) with expected
improvement, from scikit-learn."""

from __future__ import annotations

import warnings

from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

from hone.optimizers.base import register
from hone.optimizers.surrogate import SurrogateOptimizer


@register
class Bayes(SurrogateOptimizer):
    name = "bayes"
    #: A-Tune's transfer variant warm-starts from its own stored runs; hone has none of them.
    aliases = ("Bayesian_Transfer",)

    def fit_predict(self, x, y, candidates):
        kernel = ConstantKernel() * Matern(nu=2.5) + WhiteKernel(1e-3, (1e-8, 1.0))
        model = GaussianProcessRegressor(kernel, normalize_y=True, random_state=self.seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(x, y)
        return model.predict(candidates, return_std=True)
