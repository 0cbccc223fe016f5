"""A finite pool of the only configurations a study can measure (`SearchSpace.candidates`).

Some systems can run only listed configurations: a sampled table of a real system, the builds a
CI farm keeps, the presets a vendor supports. An optimiser that proposes from the pool never
spends an evaluation on a configuration that the system would silently replace by another, and
its model learns each reading at the configuration that was really measured.

Pools may hold 150,000 configurations and more: scoring all of them with a Gaussian process on
every suggestion costs seconds, so `Pool.around` offers the rows nearest to a few centres (by
the sum of unit distances, a category's mismatch counting 1) plus a random share of the rest."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hone.optimizers.encoding import Encoder, row_keys
from hone.space import Config, Domain, Value

WHOLE = 2048  # pools this small are scored whole on every suggestion


class Pool:
    def __init__(self, encoder: Encoder, configs: Sequence[Config]) -> None:
        self.encoder = encoder
        space = encoder.space
        units = np.column_stack(
            [_column(domain, [c[name] for c in configs]) for name, domain in space]
        )
        self.configs: list[Config] = []
        rows: list[int] = []
        self.index: dict[bytes, int] = {}
        for position, key in enumerate(row_keys(units.reshape(-1, encoder.dims))):
            if key in self.index:
                continue
            if not space.constraints or space.feasible(configs[position]):
                self.index[key] = len(rows)
                rows.append(position)
                self.configs.append(dict(configs[position]))
        self.units = units[rows]
        self.unordered = encoder.is_unordered()

    @property
    def whole(self) -> bool:
        """Small enough to be scored whole on every suggestion."""
        return len(self) <= WHOLE

    def __len__(self) -> int:
        return len(self.configs)

    def config(self, row: np.ndarray) -> Config | None:
        """The pool's configuration at a unit row, or None when the row is not in the pool."""
        found = self.index.get(row_keys(row[None, :])[0])
        return dict(self.configs[found]) if found is not None else None

    def distances(self, centre: np.ndarray) -> np.ndarray:
        """Distance of every pool row to `centre`: unit gaps summed, a category's mismatch 1."""
        gaps = np.abs(self.units - centre)
        gaps[:, self.unordered] = gaps[:, self.unordered] > 1e-9
        return gaps.sum(axis=1)

    def nearest(self, centre: np.ndarray, count: int, exclude: set[bytes]) -> np.ndarray:
        """Indices of the `count` rows nearest to `centre` that are not in `exclude`."""
        distances = self.distances(centre)
        wanted = count + len(exclude)
        if wanted < len(distances):  # a partial sort: the pool may be 150,000 rows
            order = np.argpartition(distances, wanted)[:wanted]
            order = order[np.argsort(distances[order], kind="stable")]
        else:
            order = np.argsort(distances, kind="stable")
        keys = row_keys(self.units[order])
        fresh = [i for i, k in zip(order, keys, strict=True) if k not in exclude]
        return np.array(fresh[:count], dtype=int)

    def spread(self, count: int, rng: np.random.Generator) -> list[Config]:
        """`count` distinct configurations spread over the pool: each point of a random Latin
        hypercube taken to its nearest pool row."""
        count = min(count, len(self))
        dims = self.encoder.dims
        strata = [(rng.permutation(count) + rng.random(count)) / count for _ in range(dims)]
        chosen: list[int] = []
        taken: set[bytes] = set()
        for point in np.column_stack(strata).reshape(count, dims):
            found = self.nearest(point, 1, taken)
            chosen += found.tolist()
            taken.update(row_keys(self.units[found]))
        return [dict(self.configs[i]) for i in chosen]

    def sample(self, rng: np.random.Generator) -> Config:
        return dict(self.configs[int(rng.integers(len(self)))])

    def around(
        self, centres: np.ndarray, rng: np.random.Generator, tried: set[bytes], near: int = 256
    ) -> np.ndarray:
        """Unit rows to score: the whole pool when it is small, else the `near` rows nearest
        the first centre, a quarter of that around each other centre and as many random rows;
        measured rows left out."""
        if self.whole:
            rows = np.arange(len(self))
        else:
            parts = [self.nearest(centres[0], near, tried)]
            parts += [self.nearest(c, near // 4, tried) for c in centres[1:]]
            parts.append(rng.choice(len(self), size=min(len(self), 4 * near), replace=False))
            rows = np.unique(np.concatenate(parts))
        keys = row_keys(self.units[rows])
        return self.units[[r for r, k in zip(rows, keys, strict=True) if k not in tried]]


def _column(domain: Domain, values: list[Value]) -> np.ndarray:
    """Unit positions of one knob's values (each distinct value converted once: a pool of
    150,000 rows holds a few dozen per knob)."""
    known: dict[Value, float] = {}
    out = np.empty(len(values))
    for i, value in enumerate(values):
        unit = known.get(value)
        if unit is None:
            unit = known[value] = domain.to_unit(value)
        out[i] = unit
    return out
