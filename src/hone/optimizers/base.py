"""The optimiser interface (ask / tell / recommend) and the registry of optimisers."""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from hone.errors import HoneError
from hone.space import Config, SearchSpace

_REGISTRY: dict[str, type[Optimizer]] = {}
#: Every engine name (lower case) and the module of this package that registers it, so that a
#: project's engine is checked, and its optimiser built, without importing the others: SciPy
#: and scikit-learn, which `auto` and the model-based ones need, take a second or more to import,
#: in every `hone check` and in a study of the random or grid engine too.
ENGINES = {
    "auto": "auto",
    "ppo": "auto",
    "bayes": "bayes",
    "bayesian_transfer": "bayes",
    "extratrees": "extra_trees",
    "forest": "forest",
    "gbrt": "gbrt",
    "gridsearch": "grid",
    "lhs": "lhs",
    "random": "random",
    "abtest": "sweep",
    "traverse": "sweep",
    "tpe": "tpe",
}
RETRIES = 8  # asks to get past configurations pending elsewhere, in the default ask_batch


@dataclass(frozen=True)
class Observation:
    """One measurement. `value` is minimised; None means the trial failed."""

    config: Config
    value: float | None


class Optimizer(ABC):
    """Proposes configurations to measure and names the one to deploy. Always minimises:
    the tuning loop negates objectives that are maximised."""

    name: ClassVar[str]
    #: Other names accepted by `--engine` (A-Tune's engine names).
    aliases: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        space: SearchSpace,
        *,
        seed: int | None = None,
        budget: int | None = None,
        random_starts: int | None = None,
        split_count: int | None = None,
    ) -> None:
        """`budget` is the number of evaluations planned; `random_starts` (A-Tune) the number
        of space-filling points before a model is used (None: the optimiser's own choice);
        `split_count` (A-Tune) the points per knob range for lhs and abtest."""
        self.space = space
        self.seed = seed
        self.budget = budget
        self.random_starts = random_starts
        self.split_count = split_count
        self.rng = np.random.default_rng(seed)
        self.history: list[Observation] = []

    @abstractmethod
    def ask(self) -> Config:
        """The next configuration to measure."""

    def ask_batch(self, n: int, pending: Sequence[Config] = ()) -> list[Config]:
        """n configurations to measure at once (on several machines), given the `pending`
        ones being measured elsewhere. This default only avoids proposing a pending or
        already proposed configuration again (a few asks at most, so a small space still
        gets its n); override to diversify."""
        taken = {self.space.key(config) for config in pending}
        proposals: list[Config] = []
        for _ in range(n):
            config = self.ask()
            for _ in range(RETRIES):
                if self.space.key(config) not in taken:
                    break
                config = self.ask()
            taken.add(self.space.key(config))
            proposals.append(config)
        return proposals

    def tell(self, config: Config, value: float | None) -> None:
        """Learn one result; `value` None means the configuration failed."""
        self.history.append(Observation(dict(config), value))

    def recommend(self) -> Config | None:
        """The configuration to deploy now: by default the best mean over its repeats."""
        sums: dict[tuple, list[float]] = defaultdict(list)
        configs: dict[tuple, Config] = {}
        for obs in self.deployable():
            key = self.space.key(obs.config)
            sums[key].append(obs.value)  # type: ignore[arg-type]
            configs[key] = obs.config
        if not sums:
            return None
        best = min(sums, key=lambda k: float(np.mean(sums[k])))
        return configs[best]

    def deployable(self) -> list[Observation]:
        """The successful trials of the configurations to deploy: one that failed in more of
        its trials than it ran is a failure region, left out while another configuration ran
        as often as it failed. Its lucky reading alone was deployed (a configuration failing in
        two rows of three read 208 once and failed twice, against 200 in twelve runs)."""
        balance: Counter[tuple] = Counter()  # runs minus failures
        for obs in self.history:
            balance[self.space.key(obs.config)] += 1 if obs.value is not None else -1
        done = [o for o in self.history if o.value is not None]
        sure = [o for o in done if balance[self.space.key(o.config)] >= 0]
        return sure or done

    def first_config(self) -> Config | None:
        """The default configuration when it has not been measured yet (start from what runs)."""
        default = self.space.default()
        if default is not None and not self.history and self.space.feasible(default):
            return default
        return None


class StartFirst:
    """An optimiser that has given configurations measured first (a static profile's values,
    `tuning: {start: ...}`), in order, then asks the one it wraps. Every result still reaches
    the wrapped optimiser through `tell`, the start points' too, so its model learns from them;
    a point already measured (a resumed study) or infeasible is not asked again."""

    def __init__(self, inner: Optimizer, points: Sequence[Config]) -> None:
        self.inner = inner
        self.queue = [dict(point) for point in points]

    def _next_start(self, taken: set[tuple]) -> Config | None:
        taken = taken | {self.inner.space.key(o.config) for o in self.inner.history}
        while self.queue:
            point = self.queue.pop(0)
            if self.inner.space.key(point) not in taken and self.inner.space.feasible(point):
                return point
        return None

    def ask(self) -> Config:
        return self._next_start(set()) or self.inner.ask()

    def ask_batch(self, n: int, pending: Sequence[Config] = ()) -> list[Config]:
        taken = {self.inner.space.key(config) for config in pending}
        firsts: list[Config] = []
        while len(firsts) < n and (point := self._next_start(taken)) is not None:
            firsts.append(point)
            taken.add(self.inner.space.key(point))
        rest = self.inner.ask_batch(n - len(firsts), [*pending, *firsts]) if len(firsts) < n else []
        return firsts + rest

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # tell, recommend, history, space, ...


def start_first(optimizer: Optimizer, points: Sequence[Config]) -> Optimizer | StartFirst:
    """The optimiser itself when there is nothing to measure first."""
    return StartFirst(optimizer, points) if points else optimizer


def register(cls: type[Optimizer]) -> type[Optimizer]:
    """Class decorator: make an optimiser available under its name and aliases."""
    for name in (cls.name, *cls.aliases):
        _REGISTRY[name.lower()] = cls
    return cls


def optimizer_names() -> list[str]:
    return sorted(ENGINES.keys() | _REGISTRY.keys())


def make_optimizer(name: str, space: SearchSpace, **options: Any) -> Optimizer:
    """Build the optimiser registered under `name` (case-insensitive), importing its module
    only."""
    key = name.lower()
    if key not in _REGISTRY and key in ENGINES:
        importlib.import_module(f"{__package__}.{ENGINES[key]}")
    cls = _REGISTRY.get(key)
    if cls is None:
        raise HoneError(
            f"unknown engine {name!r} (known: {', '.join(optimizer_names())})", key="engine"
        )
    return cls(space, **options)
