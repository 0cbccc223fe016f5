"""Pool tasks: a sampled table of a real system, where only the table's rows can be measured.

The candidates are the table's distinct configurations. `space.candidates` is set to them, so
an optimiser that can choose from a finite pool (auto, FLASH, PromiseTune) proposes rows
directly; every other proposal is resolved to a row by ONE rule for every tuner:

- distance: the sum over knobs of |position of the proposal - position of the row|, a knob's
  position being its value's rank among the table's values scaled to [0, 1] (ordinal and
  numeric knobs); a categorical knob adds 1 when the values differ, 0 when equal;
- the nearest row wins; ties go to the row that comes first in the table (deterministic).

The tuner is told the resolved row's reading for its own proposal (it asked for x, the system
could only run the nearest measured configuration). What a tuner deploys is resolved by the
same rule and scored by that row's value. The tables hold one reading per row (repeats are
averaged), so the row's value is its truth; a measurement is the truth, or the truth times
(1 + cv * N(0, 1)) from the run's seeded generator for the noisy variants (3 % and 10 % CV)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import yaml

from benchmarks.tuners.pools.table import Table, read_table
from benchmarks.tuners.tasks import Task, gap_scale
from hone.space import Categorical, Config, SearchSpace

NOISE_LEVELS = (0.0, 0.03, 0.10)  # noise-free and multiplicative noise of 3 % and 10 % CV
POOLS = Path(__file__).resolve().parent / "pools"


class Resolver:
    """Nearest table row to any configuration, vectorised over the rows (pools of 150,000
    rows resolve in milliseconds); exact matches by a dictionary lookup."""

    def __init__(self, table: Table) -> None:
        self.names = list(table.knobs)
        self.domains = table.knobs
        self.categorical = np.array([isinstance(d, Categorical) for d in table.knobs.values()])
        self.matrix = np.array([self._position(c) for c in table.configs])  # rows x knobs
        self.index = {self._key(c): i for i, c in enumerate(table.configs)}

    def _key(self, config: Config) -> tuple:
        return tuple(config[n] for n in self.names)

    def _position(self, config: Config) -> list[float]:
        """Unit position per ordinal knob; the category's index per categorical knob."""
        out = []
        for name, domain in self.domains.items():
            value = config[name]
            if isinstance(domain, Categorical):
                out.append(float(domain.choices.index(value)) if value in domain.choices else -1)
            else:
                out.append(domain.to_unit(value))
        return out

    def row(self, config: Config) -> int:
        exact = self.index.get(self._key(config))
        if exact is not None:
            return exact
        point = np.array(self._position(config))
        gaps = np.abs(self.matrix - point)
        gaps[:, self.categorical] = gaps[:, self.categorical] > 0  # a mismatch costs 1
        # rounded, so that sums equal on paper tie (1/3 + 2/3 and 1 may differ in the last bit);
        # argmin takes the first of equals: the table's order
        return int(np.argmin(np.round(gaps.sum(axis=1), 9)))


class PoolTask(Task):
    def __init__(
        self,
        path: Path,
        noise: float = 0.0,
        system: str | None = None,
        minimize: bool | None = None,  # overrides the table's declared direction
    ) -> None:
        table = _table(path)
        minimize = table.minimize if minimize is None else minimize
        self.table, self.noise = table, noise
        self.system = system or table.name.lower()
        self.resolver = _resolver(path)
        self.values = table.values
        order = np.argsort(table.values if minimize else -table.values, kind="stable")
        # The default: the median configuration of the table (a table has no default row;
        # the median leaves half the table better, as a stock configuration would).
        default = table.configs[int(order[(len(order) - 1) // 2])]
        space = SearchSpace(dict(table.knobs), defaults=dict(default), candidates=table.configs)
        suffix = f"-{round(100 * noise)}%" if noise else ""
        super().__init__(f"{table.name}{suffix}", space, minimize)
        self.truths = {
            self.space.key(c): float(v) for c, v in zip(table.configs, table.values, strict=True)
        }
        self._optimum = float(table.values.min() if minimize else table.values.max())
        self._worst = float(table.values.max() if minimize else table.values.min())
        self._scale = gap_scale(self._optimum, self._worst, float(np.median(table.values)))
        self._cache: dict[tuple, int] = {}

    def row(self, config: Config) -> int:
        key = self.space.key(config)
        if key not in self._cache:
            self._cache[key] = self.resolver.row(config)
        return self._cache[key]

    def resolve(self, config: Config) -> Config:
        """The table row a proposal runs as."""
        return self.table.configs[self.row(config)]

    def measure(self, config: Config, rng: np.random.Generator) -> float | None:
        truth = float(self.values[self.row(config)])
        return truth * (1 + self.noise * rng.normal()) if self.noise else truth

    def truth(self, config: Config) -> float | None:
        return float(self.values[self.row(config)])

    def optimum(self) -> float:
        return self._optimum

    def worst(self) -> float:
        return self._worst

    def scale(self) -> float:
        """As for the other real tables (tasks.gap_scale): |optimum|, or where the optimum is
        0 or the values cross 0, the median's distance from it."""
        return self._scale


@cache
def _table(path: Path) -> Table:
    """A table read once per process: its three noise variants share it."""
    return read_table(path)


@cache
def _resolver(path: Path) -> Resolver:
    return Resolver(_table(path))


def pool_tasks(tables: list[str], noise_levels=NOISE_LEVELS) -> list[PoolTask]:
    """The suite's pool tasks: each named table (pools/pools.yaml) at each noise level."""
    index = yaml.safe_load((POOLS / "pools.yaml").read_text())
    return [
        PoolTask(POOLS / f"{t}.csv.gz", n, index[t]["system"], index[t]["minimise"])
        for t in tables
        for n in noise_levels
    ]
