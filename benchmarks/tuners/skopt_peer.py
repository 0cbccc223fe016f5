"""scikit-optimize set up the way A-Tune sets it up: `Optimizer(base_estimator="GP" or "GBRT",
acq_func="gp_hedge", n_initial_points=random_starts)`, with every discrete knob (numeric or not)
given as an unordered Categorical, and the best single reading deployed. Failed trials are told
as the worst value seen (scikit-optimize cannot take a missing value)."""

from __future__ import annotations

import warnings

import numpy as np

from hone.optimizers import Observation
from hone.space import Config, FloatRange, IntRange, SearchSpace

if not hasattr(np, "in1d"):  # scikit-optimize 0.10 still calls it; NumPy 2.4 removed it
    np.in1d = np.isin  # type: ignore[attr-defined]


class SkoptAtune:
    def __init__(self, space: SearchSpace, seed: int, estimator: str, random_starts: int = 10):
        from skopt import Optimizer
        from skopt.space import Categorical, Integer, Real

        self.space = space
        self.dimensions = []
        for _name, domain in space:
            if isinstance(domain, IntRange) and (domain.values() is None or domain.step == 1):
                self.dimensions.append(Integer(domain.low, domain.high))
            elif isinstance(domain, FloatRange) and not domain.step:
                self.dimensions.append(Real(domain.low, domain.high))
            else:  # A-Tune: discrete knobs, numeric ones too, become categories
                self.dimensions.append(Categorical([str(v) for v in domain.values() or []]))
        self.optimizer = Optimizer(
            self.dimensions,
            base_estimator=_estimator(estimator, seed),
            acq_func="gp_hedge",
            n_initial_points=random_starts,
            random_state=seed,
        )
        self.history: list[Observation] = []

    def _decode(self, point: list) -> Config:
        config = {}
        for (name, domain), value in zip(self.space, point, strict=True):
            if isinstance(value, str | np.str_):
                config[name] = next(v for v in domain.values() or [] if str(v) == str(value))
            else:
                config[name] = domain.from_unit(
                    domain.to_unit(value.item() if hasattr(value, "item") else value)
                )
        return config

    def _encode(self, config: Config) -> list:
        point = []
        for (name, _), dimension in zip(self.space, self.dimensions, strict=True):
            value = config[name]
            if hasattr(dimension, "categories"):
                point.append(str(value))
            else:  # a log-scale float can round-trip a hair outside its bounds
                point.append(type(value)(np.clip(value, dimension.low, dimension.high)))
        return point

    def ask(self) -> Config:
        # On a small grid it proposes a point told already and says so, then takes a random
        # one: what A-Tune runs too, but a warning per ask buries the harness's progress lines.
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "The objective has been evaluated", UserWarning)
            return self._decode(self.optimizer.ask())

    def tell(self, config: Config, value: float | None) -> None:
        self.history.append(Observation(config, value))
        if value is None:
            seen = [o.value for o in self.history if o.value is not None]
            value = max(seen) if seen else 0.0
        self.optimizer.tell(self._encode(config), float(value))

    def recommend(self) -> Config | None:
        done = [o for o in self.history if o.value is not None]
        return min(done, key=lambda o: o.value).config if done else None


def _estimator(name: str, seed: int):
    """scikit-optimize's GBRT, marked as a regressor for current scikit-learn (whose estimator
    tags scikit-optimize 0.10 predates); the GP is passed by name as A-Tune does."""
    if name != "GBRT":
        return name
    from sklearn.ensemble import GradientBoostingRegressor
    from skopt.learning import GradientBoostingQuantileRegressor

    class Quantiles(GradientBoostingQuantileRegressor):
        def __sklearn_tags__(self):
            tags = super().__sklearn_tags__()
            tags.estimator_type = "regressor"
            return tags

    return Quantiles(base_estimator=GradientBoostingRegressor(loss="quantile"), random_state=seed)
