"""How the score moves along a knob that matters: the importance trees' partial dependence.

For each value of the knob, every measured configuration is given that value and the trees'
predictions are averaged: the knob's own effect with the others as the study measured them, not
the luck of the few trials that happened to hold that value. Read it as the model's summary of
the trials, no more: values the study never came near are extrapolated by the trees as flat."""

from __future__ import annotations

from collections.abc import Sequence

from hone.importance import fit
from hone.optimizers.base import Observation
from hone.space import Config, SearchSpace
from hone.space.domains import Value

POINTS = 8  # values along a knob's range
#: Every value of a finite domain up to this many: compress's level 1..9 at eight points left
#: out 5, the winner's value.
EVERY_VALUE = 16


def effect_curves(
    space: SearchSpace,
    configs: Sequence[Config],
    scores: Sequence[float],
    knobs: Sequence[str],
    points: int = POINTS,
) -> dict[str, list[tuple[Value, float]]]:
    """For each of `knobs`, (value, predicted score) along its range (higher score is better);
    empty when the trials cannot fit the trees (fewer than 4, or all alike)."""
    observations = [Observation(c, -s) for c, s in zip(configs, scores, strict=True)]
    fitted = fit(space, observations)
    if fitted is None:
        return {}
    encoder, model, measured = fitted
    curves: dict[str, list[tuple[Value, float]]] = {}
    for name in knobs:
        curve = []
        domain = space.domains[name]
        finite = domain.values()
        values = finite if finite is not None and len(finite) <= EVERY_VALUE else None
        for value in values or domain.grid(points):
            x = encoder.encode([{**config, name: value} for config in measured])
            curve.append((value, -float(model.predict(x).mean())))
        curves[name] = curve
    return curves
