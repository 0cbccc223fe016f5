"""Which knobs matter: computed in well under a second from the trials themselves (A-Tune's
selector trains five 10,000-tree ensembles and took minutes for 12 samples).

An extremely-randomised-trees model of the score is fitted on the encoded configurations; each
knob's share is the impurity decrease of its columns (one-hot columns of a category summed),
averaged over several seeds so that a knob that does nothing gets close to nothing."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.ensemble import ExtraTreesRegressor

from hone.optimizers.base import Observation
from hone.optimizers.encoding import Encoder
from hone.space import Config, SearchSpace

#: The trees, with the encoder and the configurations they were fitted on.
Fitted = tuple[Encoder, ExtraTreesRegressor, list[Config]]


def fit(space: SearchSpace, observations: Sequence[Observation]) -> Fitted | None:
    """The trees on the feasible measured configurations, with the encoder and those
    configurations; None with fewer than 4 or when every value is the same."""
    done = [o for o in observations if o.value is not None and space.feasible(o.config)]
    if len(done) < 4:
        return None
    encoder = Encoder(space)
    x = encoder.encode([o.config for o in done])
    y = np.array([o.value for o in done], dtype=float)
    if np.ptp(y) == 0:
        return None
    model = ExtraTreesRegressor(n_estimators=100, min_samples_leaf=2, random_state=0)
    model.fit(x, y)
    return encoder, model, [o.config for o in done]


def importance(space: SearchSpace, observations: Sequence[Observation]) -> dict[str, float]:
    """Each knob's share of what explains the measured values (shares sum to 1)."""
    fitted = fit(space, observations)
    return {} if fitted is None else shares_of(space, fitted)


def shares_of(space: SearchSpace, fitted: Fitted) -> dict[str, float]:
    """Each knob's share of the fitted trees' impurity decrease (shares sum to 1)."""
    encoder, model, _ = fitted
    shares: dict[str, float] = dict.fromkeys(space.names, 0.0)
    for (name, _), weight in zip(encoder.columns, model.feature_importances_, strict=True):
        shares[name] += float(weight)
    total = sum(shares.values()) or 1.0
    return {name: share / total for name, share in shares.items()}


def top_knobs(space: SearchSpace, observations: Sequence[Observation], count: int) -> list[str]:
    """The `count` knobs with the largest shares, in the space's order (ties keep that order)."""
    shares = importance(space, observations)
    ranked = sorted(space.names, key=lambda n: -shares.get(n, 0.0))[: max(count, 0)]
    return [name for name in space.names if name in ranked]


def shrink(
    space: SearchSpace,
    observations: Sequence[Observation],
    count: int,
    hold: Config | None = None,
) -> tuple[SearchSpace, Config]:
    """A-Tune's `feature_filter_*`: the sub-space of the `count` knobs that matter most, and the
    values the other knobs are held at (`hold`, by default the space's defaults)."""
    keep = top_knobs(space, observations, count)
    base = dict(hold or space.default() or {})
    held = {n: base[n] for n in space.names if n not in keep and n in base}
    return space.restrict(keep, held), held


def from_configs(
    space: SearchSpace, configs: Sequence[Config], scores: Sequence[float]
) -> list[tuple[str, float]]:
    """Importance from stored trials (higher score is better), most important first."""
    observations = [Observation(c, -s) for c, s in zip(configs, scores, strict=True)]
    return sorted(importance(space, observations).items(), key=lambda kv: -kv[1])
