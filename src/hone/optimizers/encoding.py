"""Turning configurations into numbers for surrogate models: ordered knobs by their position in
[0, 1] (so 1024 lies between 512 and 2048), categories one-hot."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hone.space import Categorical, Config, SearchSpace


class Encoder:
    def __init__(self, space: SearchSpace) -> None:
        self.space = space
        self.columns: list[tuple[str, str | None]] = []
        for name, domain in space:
            if isinstance(domain, Categorical) and len(domain.choices) > 2:
                self.columns += [(name, choice) for choice in domain.choices]
            else:
                self.columns.append((name, None))

    @property
    def width(self) -> int:
        return len(self.columns)

    def encode(self, configs: Sequence[Config]) -> np.ndarray:
        matrix = np.zeros((len(configs), self.width))
        domains = self.space.domains
        for row, config in enumerate(configs):
            for col, (name, choice) in enumerate(self.columns):
                value = config[name]
                if choice is None:
                    matrix[row, col] = domains[name].to_unit(value)
                else:
                    matrix[row, col] = 1.0 if value == choice else 0.0
        return matrix


def neighbours(
    space: SearchSpace, config: Config, rng: np.random.Generator, count: int, scale: float
) -> list[Config]:
    """Random configurations near `config`: ordered knobs moved by about `scale` of their
    range, a few knobs changed at a time, categories switched now and then."""
    names = space.names
    result = []
    for _ in range(count):
        candidate = dict(config)
        changed = rng.choice(
            len(names), size=max(1, min(len(names), rng.poisson(1.5) + 1)), replace=False
        )
        for index in changed:
            name = names[int(index)]
            domain = space.domains[name]
            if domain.ordered:
                position = domain.to_unit(candidate[name]) + rng.normal(0.0, scale)
                candidate[name] = domain.from_unit(float(np.clip(position, 0.0, 1.0)))
            else:
                values = domain.values() or []
                candidate[name] = values[int(rng.integers(len(values)))]
        result.append(candidate)
    return result
