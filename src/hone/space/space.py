"""A search space: named domains in a fixed order, plus the constraints between them."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from hone.space.constraints import Constraint, ConstraintError
from hone.space.domains import Domain, Value

Config = dict[str, Value]


@dataclass
class SearchSpace:
    """Knob names mapped to domains, in declaration order, with optional default values.

    `candidates`, when set, is a finite pool of the only configurations that can be measured
    (a sampled table of a real system): an optimiser that knows the pool proposes from it, and
    whoever runs the trials resolves any other proposal to a pool member."""

    domains: dict[str, Domain]
    constraints: list[Constraint] = field(default_factory=list)
    defaults: dict[str, Value] = field(default_factory=dict)
    candidates: list[Config] | None = None

    @property
    def names(self) -> list[str]:
        return list(self.domains)

    def __len__(self) -> int:
        return len(self.domains)

    def __iter__(self) -> Iterator[tuple[str, Domain]]:
        return iter(self.domains.items())

    def feasible(self, config: Mapping[str, Value]) -> bool:
        """True when every value lies in its domain and every constraint holds."""
        if any(not d.contains(config[n]) for n, d in self.domains.items()):
            return False
        return all(c.holds(config) for c in self.constraints)

    def default(self) -> Config | None:
        """The default configuration when every knob has a default in its domain."""
        if set(self.defaults) >= set(self.domains):
            config = {n: self.defaults[n] for n in self.domains}
            if all(d.contains(config[n]) for n, d in self.domains.items()):
                return config
        return None

    def to_unit(self, config: Mapping[str, Value]) -> np.ndarray:
        """The configuration as a point in [0, 1]^d (categories by index)."""
        return np.array([d.to_unit(config[n]) for n, d in self.domains.items()], dtype=float)

    def from_unit(self, point: np.ndarray) -> Config:
        pairs = zip(self.domains.items(), point, strict=True)
        return {name: domain.from_unit(float(u)) for (name, domain), u in pairs}

    def sample(self, rng: np.random.Generator, tries: int = 1000) -> Config:
        """A uniformly random configuration that satisfies the constraints."""
        for _ in range(tries):
            config = self._uniform(rng)
            if all(c.holds(config) for c in self.constraints):
                return config
        raise ConstraintError(
            f"no configuration of {tries} random ones satisfies the constraints "
            f"({'; '.join(c.expression for c in self.constraints)}): check them against the ranges"
        )

    def check_types(self) -> None:
        """ConstraintError for a constraint that mixes text and numbers (`word > 3`), found at
        each knob's lowest and highest value: no configuration could satisfy it."""
        for end in (0.0, 1.0):
            config = {n: d.from_unit(end) for n, d in self.domains.items()}
            for constraint in self.constraints:
                constraint.holds(config)

    def _uniform(self, rng: np.random.Generator) -> Config:
        config: Config = {}
        for name, domain in self.domains.items():
            values = domain.values()
            if values is not None:
                config[name] = values[int(rng.integers(len(values)))]
            else:
                config[name] = domain.from_unit(float(rng.random()))
        return config

    def restrict(self, names: list[str], fixed: Mapping[str, Value]) -> SearchSpace:
        """The sub-space over `names`, every other knob held at its value in `fixed`;
        constraints that involve held knobs are checked with those values filled in."""
        held = {n: v for n, v in fixed.items() if n not in names}
        return SearchSpace(
            {n: d for n, d in self.domains.items() if n in names},
            [_Bound(c, held) for c in self.constraints],
            {n: v for n, v in self.defaults.items() if n in names},
        )

    def key(self, config: Mapping[str, Value]) -> tuple:
        """A hashable identity for a configuration (floats rounded to kill print noise)."""
        return tuple(
            round(v, 10) if isinstance(v, float) else v for v in (config[n] for n in self.domains)
        )


@dataclass(frozen=True)
class _Bound:
    """A constraint with some knobs held at fixed values."""

    constraint: Constraint
    held: Mapping[str, Value]

    def holds(self, config: Mapping[str, Value]) -> bool:
        return self.constraint.holds({**self.held, **config})
