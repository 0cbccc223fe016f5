"""hone's default optimiser, made for expensive, noisy system benchmarks.

- It starts from the default configuration (the tuning loop measures it several times, which
  tells the noise) and a small Latin hypercube.
- A Gaussian process (Matern 5/2 + white noise) models the objective on the unit-encoded space:
  numeric knobs by position, so order is kept; categories one-hot. Its white-noise term is the
  noise model.
- Failures are not imputed as fake values: a tree classifier learns where configurations fail,
  and the acquisition is multiplied by the probability of success.
- Candidates mix global random samples with neighbours of the best configurations, in a region
  that narrows as the study goes on (a trust region, as in TuRBO).
- When the uncertainty about the incumbent is larger than what a new configuration is expected
  to gain, it re-measures the incumbent instead: a noisy winner is worth confirming.
- It recommends the configuration with the best posterior mean, never the luckiest reading.
- Suggestions stay cheap: the model is trained on a capped window (the best and the most recent
  points) and its hyperparameters are refitted only every few trials.
- `ask_batch` proposes diverse configurations for several machines (constant liar)."""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular
from scipy.spatial.distance import cdist
from sklearn.ensemble import ExtraTreesClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

from hone.optimizers.base import Observation, Optimizer, register
from hone.optimizers.designs import latin_hypercube
from hone.optimizers.encoding import Encoder, first_feasible, fresh_candidates, neighbours
from hone.optimizers.surrogate import expected_improvement
from hone.space import Config, SearchSpace

WINDOW = 160  # points the model is trained on, at most
REFIT_EVERY = 8  # trials between hyperparameter fits
MAX_REPEATS = 4  # measurements of one configuration before it is never re-measured


@register
class Auto(Optimizer):
    name = "auto"

    def __init__(self, space: SearchSpace, **options) -> None:
        super().__init__(space, **options)
        self.encoder = Encoder(space)
        starts = self.random_starts or max(3, min(8, self.encoder.width // 2 + 2))
        if self.budget:
            starts = min(starts, max(2, self.budget // 4))
        self.design = latin_hypercube(space, starts, self.rng)
        self.kernel = None
        self.fitted_at = -REFIT_EVERY
        self.model: _Posterior | None = None
        self.measured: Counter[tuple] = Counter()

    # -- proposals -------------------------------------------------------------------------

    def ask(self) -> Config:
        first = self.first_config()
        if first is not None:
            return first
        done = [o for o in self.history if o.value is not None]
        if self.design and len(self.history) <= len(self.design) + 3:
            return self.design.pop(0)
        if len(done) < 3:
            return self.space.sample(self.rng)
        self._fit(done)
        incumbent, incumbent_mean, incumbent_std = self._incumbent(done)
        pool = self._candidates(done, incumbent)
        if not len(pool):
            return dict(incumbent)
        mean, std = self._latent(self.encoder.features(pool))
        success = self._success(pool)
        # Where failure is more likely than not, do not go at all; elsewhere weigh by it.
        gain = expected_improvement(mean, std, incumbent_mean) * np.where(
            success < 0.6, 0.0, success**2
        )
        order = np.argsort(-gain)
        repeats = self.measured[self.space.key(incumbent)]
        if incumbent_std > 2 * gain[order[0]] and repeats < MAX_REPEATS:
            return dict(incumbent)
        return first_feasible(self.encoder, pool, order) or dict(incumbent)

    def tell(self, config: Config, value: float | None) -> None:
        super().tell(config, value)
        self.measured[self.space.key(config)] += 1

    def ask_batch(self, n: int) -> list[Config]:
        """Constant liar: each pending proposal is assumed to score the current best mean."""
        proposals: list[Config] = []
        saved = list(self.history)
        liar = min((o.value for o in saved if o.value is not None), default=0.0)
        for _ in range(n):
            config = self.ask()
            proposals.append(config)
            self.history.append(Observation(dict(config), liar))
            self.fitted_at = -REFIT_EVERY if self.kernel is None else self.fitted_at
        self.history = saved
        return proposals

    def recommend(self) -> Config | None:
        done = [o for o in self.history if o.value is not None]
        if len(done) < 3:
            return super().recommend()
        self._fit(done)
        return dict(self._incumbent(done)[0])

    # -- the model -------------------------------------------------------------------------

    def _window(self, done: list[Observation]) -> list[Observation]:
        if len(done) <= WINDOW:
            return done
        best = sorted(done, key=lambda o: o.value)[: WINDOW // 2]
        recent = [o for o in done[-WINDOW:] if o not in best][: WINDOW - len(best)]
        return best + recent

    def _fit(self, done: list[Observation]) -> None:
        """Condition the GP on the window; refit its hyperparameters only now and then (every
        REFIT_EVERY trials early on, every tenth of the history later), which is what costs."""
        window = self._window(done)
        x = self.encoder.encode([o.config for o in window])
        y = np.array([o.value for o in window], dtype=float)
        since = len(self.history) - self.fitted_at
        if self.kernel is None or since >= max(REFIT_EVERY, len(self.history) // 10):
            ard = self.encoder.width <= 20
            scales = np.full(self.encoder.width, 0.3) if ard else 0.3
            kernel = ConstantKernel(1.0, (1e-3, 1e3)) * Matern(
                scales, (0.08, 20.0), nu=2.5
            ) + WhiteKernel(1e-2, (1e-6, 1.0))
            model = GaussianProcessRegressor(kernel, normalize_y=True, random_state=self.seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                model.fit(x, y)
            self.kernel, self.fitted_at = model.kernel_, len(self.history)
        self.model = _Posterior(self.kernel, x, y)

    def _latent(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and the spread of the true value (measurement noise taken out)."""
        assert self.model is not None
        return self.model.predict(x)

    def _incumbent(self, done: list[Observation]) -> tuple[Config, float, float]:
        """The measured configuration with the best posterior mean."""
        unique = {self.space.key(o.config): o.config for o in done}
        configs = list(unique.values())
        mean, std = self._latent(self.encoder.encode(configs))
        best = int(np.argmin(mean))
        return configs[best], float(mean[best]), float(std[best])

    def _success(self, pool: np.ndarray) -> np.ndarray:
        """Probability that each candidate runs at all, learned from failed trials: a tree
        classifier for the shape of the failure region, averaged with nearness (a candidate
        closer to a failure than to any success is probably a failure too)."""
        labels = np.array([o.value is not None for o in self.history])
        if labels.all() or not labels.any():
            return np.ones(len(pool))
        seen = self.encoder.encode([o.config for o in self.history])
        x = self.encoder.features(pool)
        classifier = ExtraTreesClassifier(
            n_estimators=40, min_samples_leaf=2, random_state=self.seed
        )
        classifier.fit(seen, labels)
        column = list(classifier.classes_).index(True)
        trees = classifier.predict_proba(x)[:, column]
        distance = cdist(x, seen)
        to_success = distance[:, labels].min(axis=1)
        to_failure = distance[:, ~labels].min(axis=1)
        nearness = to_failure / np.maximum(to_failure + to_success, 1e-12)
        return (trees + nearness) / 2

    def _candidates(self, done: list[Observation], incumbent: Config) -> np.ndarray:
        """Unit rows to score: global samples and a narrowing region around the best."""
        progress = len(done) / max(self.budget or 50, 1)
        scale = float(np.clip(0.25 * (1 - progress), 0.04, 0.25))
        dims = self.encoder.dims
        best = sorted(done, key=lambda o: o.value)[:2]
        centres = self.encoder.units([incumbent] + [o.config for o in best])
        parts = [self.encoder.snap(self.rng.random((384, dims)))]
        parts.append(neighbours(self.encoder, centres[0], self.rng, 512, scale))
        for row in centres[1:]:
            parts.append(neighbours(self.encoder, row, self.rng, 128, scale))
        seen = self.encoder.units([o.config for o in self.history])
        return fresh_candidates(self.encoder, np.vstack(parts), seen)


class _Posterior:
    """A GP conditioned on data with fixed hyperparameters: one Cholesky factorisation, then
    mean and latent spread for many candidates (what scikit-learn's fit and predict do, minus
    the work hone does not need)."""

    def __init__(self, kernel, x: np.ndarray, y: np.ndarray) -> None:
        self.kernel, self.x = kernel, x
        self.mean_y, self.std_y = float(y.mean()), float(y.std()) or 1.0
        gram = kernel(x)  # the white-noise term adds the measurement noise on the diagonal
        gram[np.diag_indices_from(gram)] += 1e-10
        self.factor = cho_factor(gram, lower=True)
        self.alpha = cho_solve(self.factor, (y - self.mean_y) / self.std_y)

    def predict(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        cross = self.kernel.k1(x, self.x)  # no noise between distinct points
        mean = cross @ self.alpha * self.std_y + self.mean_y
        v = solve_triangular(self.factor[0], cross.T, lower=True)
        variance = self.kernel.k1.diag(x) - np.einsum("ij,ij->j", v, v)
        return mean, np.sqrt(np.maximum(variance, 1e-12)) * self.std_y
