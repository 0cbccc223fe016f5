"""Configurations as numbers, for surrogate models.

Each knob is a position in [0, 1] ("units"): numeric knobs by value (log-scaled where the knob
is), ordinal knobs by rank, so 1024 lies between 512 and 2048; categories by index. Models see
"features": the units, with categories of more than two values one-hot. Candidates are made and
snapped to valid values as whole NumPy arrays, so thousands cost a few milliseconds."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from hone.space import Categorical, Config, Domain, IntRange, SearchSpace


class _Axis:
    """One knob's map between values and units, vectorised."""

    def __init__(self, domain: Domain) -> None:
        self.domain = domain
        values = domain.values()
        self.values = values
        self.positions = (
            np.array([domain.to_unit(v) for v in values]) if values is not None else None
        )

    def snap(self, units: np.ndarray) -> np.ndarray:
        units = np.clip(units, 0.0, 1.0)
        if self.positions is not None:
            return self.positions[self.index(units)]
        domain = self.domain
        if isinstance(domain, IntRange):
            if domain.log:
                low, high = math.log(domain.low), math.log(domain.high)
                x = np.exp(low + units * (high - low))
            else:
                x = domain.low + units * (domain.high - domain.low)
            k = np.round((x - domain.low) / domain.step)
            x = np.clip(domain.low + k * domain.step, domain.low, domain.high)
            if domain.log:
                return (np.log(x) - low) / (high - low) if high > low else x * 0
            return (x - domain.low) / max(domain.high - domain.low, 1)
        return units  # a continuous float range

    def index(self, units: np.ndarray) -> np.ndarray:
        """Index of the nearest listed value for each unit position."""
        assert self.positions is not None
        right = np.clip(np.searchsorted(self.positions, units), 1, len(self.positions) - 1)
        left = right - 1
        choose_left = units - self.positions[left] <= self.positions[right] - units
        return np.where(choose_left, left, right) if len(self.positions) > 1 else left * 0

    def value(self, unit: float):
        if self.positions is not None and self.values is not None:
            return self.values[int(self.index(np.array([unit]))[0])]
        return self.domain.from_unit(unit)


class Encoder:
    def __init__(self, space: SearchSpace) -> None:
        self.space = space
        self.axes = [_Axis(domain) for _, domain in space]
        self.columns: list[tuple[str, str | None]] = []
        self.one_hot: list[tuple[int, int]] = []  # (knob index, number of choices)
        # for features(): the knobs kept as units and their columns, the one-hot columns
        self._plain: list[int] = []
        self._plain_at: list[int] = []
        self._hot_at: list[int] = []
        for index, (name, domain) in enumerate(space):
            if isinstance(domain, Categorical) and len(domain.choices) > 2:
                self._hot_at += range(len(self.columns), len(self.columns) + len(domain.choices))
                self.columns += [(name, choice) for choice in domain.choices]
                self.one_hot.append((index, len(domain.choices)))
            else:
                self._plain.append(index)
                self._plain_at.append(len(self.columns))
                self.columns.append((name, None))
        self._cache: dict[int, tuple[Config, np.ndarray]] = {}
        self._sweeps: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    @property
    def width(self) -> int:
        return len(self.columns)

    @property
    def dims(self) -> int:
        return len(self.axes)

    def units(self, configs: Sequence[Config]) -> np.ndarray:
        """Unit rows of configurations (cached: history rows are encoded once)."""
        rows = []
        for config in configs:
            # By identity: an observation's config is one object for its whole life, and the
            # cache holds it, so its id cannot be reused by another.
            entry = self._cache.get(id(config))
            if entry is None or entry[0] is not config:
                entry = (config, self.space.to_unit(config))
                self._cache[id(config)] = entry
            rows.append(entry[1])
        return np.array(rows).reshape(len(rows), self.dims)

    def snap(self, units: np.ndarray) -> np.ndarray:
        return np.column_stack([axis.snap(units[:, i]) for i, axis in enumerate(self.axes)])

    def decode(self, row: np.ndarray) -> Config:
        pairs = zip(self.space.names, self.axes, row, strict=True)
        return {name: axis.value(float(u)) for name, axis, u in pairs}

    def features(self, units: np.ndarray) -> np.ndarray:
        """Model inputs: units, with many-valued categories one-hot."""
        if not self.one_hot:
            return units
        rows = np.empty((len(units), self.width))
        rows[:, self._plain_at] = units[:, self._plain]
        rows[:, self._hot_at] = one_hot(units, self.one_hot)
        return rows

    def sweep(self, levels: int) -> tuple[np.ndarray, np.ndarray]:
        """Each knob's values (at most `levels` of them, evenly spread) as (knob, position)
        pairs, knob by knob: what `coordinate_moves` sets, the same for every centre (kept:
        the climb asks for them a dozen times per suggestion)."""
        if levels not in self._sweeps:
            knobs, positions = [], []
            for i, axis in enumerate(self.axes):
                values = axis.positions
                if values is None:
                    values = np.linspace(0, 1, levels)
                elif len(values) > levels:
                    spread = np.linspace(0, len(values) - 1, levels).round()
                    values = values[np.unique(spread).astype(int)]
                knobs.append(np.full(len(values), i))
                positions.append(values)
            self._sweeps[levels] = (np.concatenate(knobs), np.concatenate(positions))
        return self._sweeps[levels]

    def encode(self, configs: Sequence[Config]) -> np.ndarray:
        return self.features(self.units(configs))

    def is_unordered(self) -> np.ndarray:
        return np.array([not axis.domain.ordered for axis in self.axes])


def squared_distances(x: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances of each row of x to each of z by one matrix product,
    |x - z|^2 = |x|^2 + |z|^2 - 2 x.z (3x faster than scipy's cdist for many columns)."""
    squared = (x * x).sum(axis=1)[:, None] + (z * z).sum(axis=1)[None, :] - 2.0 * (x @ z.T)
    return np.maximum(squared, 0.0)


def one_hot(units: np.ndarray, knobs: list[tuple[int, int]]) -> np.ndarray:
    """One column per choice of each (knob index, number of choices), 1 where chosen."""
    counts = np.array([count for _, count in knobs])
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    chosen = np.round(units[:, [index for index, _ in knobs]] * (counts - 1)).astype(int)
    block = np.zeros((len(units), counts.sum()))
    block[np.arange(len(units))[:, None], starts + chosen] = 1.0
    return block


def neighbours(
    encoder: Encoder, centre: np.ndarray, rng: np.random.Generator, count: int, scale: float
) -> np.ndarray:
    """Unit rows near `centre`: a few knobs at a time moved by about `scale` of their range;
    unordered knobs jump to a random value instead."""
    dims = encoder.dims
    rows = np.repeat(centre[None, :], count, axis=0)
    changed = rng.random((count, dims)) < min(1.0, 2.0 / dims)
    changed[np.arange(count), rng.integers(dims, size=count)] = True
    step = rng.normal(0.0, scale, (count, dims))
    jump = rng.random((count, dims))
    unordered = encoder.is_unordered()[None, :]
    moved = np.where(unordered, jump, rows + step)
    return encoder.snap(np.where(changed, moved, rows))


def fresh_candidates(pool: np.ndarray, known: set[bytes]) -> np.ndarray:
    """The distinct rows of `pool` whose keys are not in `known` (rows already measured, as
    `row_keys`), in order. Rows are compared by their bytes in a dict (np.unique over rows
    sorts them: 10x slower)."""
    first: dict[bytes, int] = {}
    for index, key in enumerate(row_keys(pool)):
        if key not in known:
            first.setdefault(key, index)
    return pool[list(first.values())]


def row_keys(rows: np.ndarray) -> list[bytes]:
    """A hashable key per unit row (rounded, so float noise does not make rows differ)."""
    rounded = np.round(rows, 9) + 0.0  # + 0.0 turns -0.0 into 0.0, which has other bytes
    return [row.tobytes() for row in rounded]


def first_feasible(encoder: Encoder, pool: np.ndarray, order: np.ndarray) -> Config | None:
    """Decode candidates best first and return the first one that satisfies the constraints."""
    for index in order:
        config = encoder.decode(pool[index])
        if encoder.space.feasible(config):
            return config
    return None


def coordinate_moves(encoder: Encoder, centre: np.ndarray, levels: int = 17) -> np.ndarray:
    """Unit rows that change one knob of `centre` to each of its values (at most `levels` of
    them, evenly spread): the one-knob-at-a-time sweeps that find most gains on servers, here
    as candidates for the model to rank."""
    knobs, positions = encoder.sweep(levels)
    rows = np.repeat(centre[None, :], len(knobs), axis=0)
    rows[np.arange(len(knobs)), knobs] = positions
    return rows
