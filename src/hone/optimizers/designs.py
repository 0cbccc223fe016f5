"""Space-filling designs shared by optimisers: Latin hypercube samples of a search space."""

from __future__ import annotations

import numpy as np

from hone.space import Config, SearchSpace


def latin_hypercube(space: SearchSpace, count: int, rng: np.random.Generator) -> list[Config]:
    """`count` configurations, each knob's range cut into `count` strata used once each;
    configurations breaking a constraint are replaced by random feasible ones."""
    if count <= 0:
        return []
    columns = [(rng.permutation(count) + rng.random(count)) / count for _ in space.names]
    design = []
    for row in range(count):
        config = space.from_unit(np.array([column[row] for column in columns]))
        design.append(config if space.feasible(config) else space.sample(rng))
    return design
