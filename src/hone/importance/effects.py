"""How the score moves along a knob that matters: the importance trees' partial dependence.

For each value of the knob, every measured configuration is given that value and the trees'
predictions are averaged: the knob's own effect with the others as the study measured them, not
the luck of the few trials that happened to hold that value. Read it as the model's summary of
the trials, no more: values the study never came near are extrapolated by the trees as flat."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hone.importance import Fitted, fit
from hone.optimizers.base import Observation
from hone.space import Config, SearchSpace
from hone.space.domains import Value

POINTS = 8  # values along a knob's range
#: Every value of a finite domain up to this many: compress's level 1..9 at eight points left
#: out 5, the winner's value.
EVERY_VALUE = 16
ROWS = 500  # configurations the effect is averaged over at most (the time is in proportion)


def effect_curves(
    space: SearchSpace,
    configs: Sequence[Config],
    scores: Sequence[float],
    knobs: Sequence[str],
    points: int = POINTS,
    fitted: Fitted | None = None,
) -> dict[str, list[tuple[Value, float]]]:
    """For each of `knobs`, (value, predicted score) along its range (higher score is better);
    empty when the trials cannot fit the trees (fewer than 4, or all alike). `fitted`: the
    trees already fitted on these trials (importance fits the same ones)."""
    if fitted is None:
        observations = [Observation(c, -s) for c, s in zip(configs, scores, strict=True)]
        fitted = fit(space, observations)
    if fitted is None:
        return {}
    encoder, model, measured = fitted
    if len(measured) > ROWS:  # the average over configurations spread evenly over the study
        measured = [measured[i * len(measured) // ROWS] for i in range(ROWS)]
    rows = encoder.encode(measured)
    points_of: list[tuple[str, Value]] = []
    blocks = []
    for name in knobs:
        # Only the knob's own columns change: set them in the encoded rows rather than encode
        # every configuration again for each value (most of the time at 1,500 trials).
        columns = [i for i, (knob, _) in enumerate(encoder.columns) if knob == name]
        domain = space.domains[name]
        finite = domain.values()
        values = finite if finite is not None and len(finite) <= EVERY_VALUE else None
        for value in values or domain.grid(points):
            x = rows.copy()
            x[:, columns] = encoder.encode([{**measured[0], name: value}])[0, columns]
            points_of.append((name, value))
            blocks.append(x)
    if not blocks:
        return {}
    # one prediction over every block: each row's prediction is its own, and scikit-learn's
    # dispatch per call cost more than the trees (32 calls: most of a `hone show`'s fit)
    predicted = model.predict(np.vstack(blocks)).reshape(len(blocks), len(rows))
    curves: dict[str, list[tuple[Value, float]]] = {name: [] for name in knobs}
    for (name, value), row in zip(points_of, predicted, strict=True):
        curves[name].append((value, -float(row.mean())))
    return curves
