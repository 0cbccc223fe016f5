"""Tuner benchmark tasks: a search space, a noisy measurement and the noise-free truth.

Tabular tasks replay real measurements (format: shared/spec/tabular-tasks.md): a tuner asking
for a configuration gets one of its measured rows at random; the truth is the mean of its
successful rows; a configuration failing in most rows is a failure region (no truth).
Synthetic tasks are knob-like functions with a known optimum (documented in docs/tuners.md)."""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.tuners.tabular_io import BadValue, TaskError, load_spec, read_rows
from hone.space import Boolean, Categorical, Config, FloatRange, IntRange, Ordinal, SearchSpace


@dataclass
class Task:
    name: str
    space: SearchSpace
    minimize: bool
    #: configuration key -> truth (None: a failure region); finite tasks only
    truths: dict[tuple, float | None] = field(default_factory=dict)
    #: (number of truths, (optimum, worst, median)) once computed
    _cached: tuple | None = field(default=None, init=False, repr=False, compare=False)

    def measure(self, config: Config, rng: np.random.Generator) -> float | None:
        raise NotImplementedError

    def truth(self, config: Config) -> float | None:
        raise NotImplementedError

    def optimum(self) -> float:
        return self._extremes()[0]

    def scale(self) -> float:
        """What a gap is relative to (gap_scale; COCO tasks override it)."""
        optimum, worst, median = self._extremes()
        return gap_scale(optimum, worst, median)

    def worst(self) -> float:
        return self._extremes()[1]

    def _extremes(self) -> tuple[float, float, float]:
        """(optimum, worst, median) of the truths, computed once per set of truths: scoring
        asks for them at every evaluation, and a grid can hold hundreds of thousands."""
        if self._cached is None or self._cached[0] != len(self.truths):
            values = np.array([v for v in self.truths.values() if v is not None])
            best, worst = (
                (values.min(), values.max()) if self.minimize else (values.max(), values.min())
            )
            extremes = (float(best), float(worst), float(np.median(values)))
            self._cached = (len(self.truths), extremes)
        return self._cached[1]


def gap_scale(optimum: float, worst: float, median: float) -> float:
    """What a gap is relative to: the optimum's size where every truth is on its side of 0;
    where the optimum is 0 (a count of errors) or the truths cross 0 (a difference, a score
    with an offset), whose 0 says nothing of size, the median truth's distance from the
    optimum. |optimum| there made 'within 2 %' depend on where 0 happened to be: an optimum
    of -0.05 among truths up to 5 left no configuration but itself within 2 %."""
    if optimum and not min(optimum, worst) < 0 < max(optimum, worst):
        return abs(optimum)
    return abs(median - optimum) or abs(optimum) or 1.0


class TabularTask(Task):
    def __init__(self, path: Path) -> None:
        spec, at = load_spec(path)
        domains = {}
        for name, knob in spec["knobs"].items():
            values = knob["values"]
            if knob["type"] == "bool":
                flags = {_flag(v) for v in values}
                if None in flags:
                    raise TaskError(f"{at('knobs', name, 'values')}: must be true or false")
                # a knob held at one value: the other is not in the grid, never to be proposed
                held = Categorical((str(flags.pop()),)) if len(flags) == 1 else None
                domains[name] = held or Boolean("True", "False")
            elif knob["type"] == "categorical":
                domains[name] = Categorical(tuple(values))
            else:
                numbers = [_number(v, knob["type"]) for v in values]
                if None in numbers:
                    kind = "whole numbers" if knob["type"] == "int" else "numbers"
                    raise TaskError(f"{at('knobs', name, 'values')}: must be {kind}")
                pair = _alike(numbers)
                if pair:  # their rows would be pooled into one configuration
                    raise TaskError(
                        f"{at('knobs', name, 'values')}: {pair[0]:g} and {pair[1]:g} are one "
                        "value to the tuners, which tell values apart to 10 decimals: give the "
                        "knob in a smaller unit"
                    )
                try:
                    domains[name] = Ordinal(tuple(numbers))
                except ValueError as exc:  # beyond what a knob may be: 1e15 either way
                    raise TaskError(f"{at('knobs', name, 'values')}: {exc}") from None
        objective = spec["objective"]
        bools = {name for name, knob in spec["knobs"].items() if knob["type"] == "bool"}
        try:
            defaults = self._typed(domains, spec["default"], bools)
        except BadValue as exc:
            raise TaskError(f"{at('default', exc.knob)}: {exc.why}") from None
        space = SearchSpace(domains, defaults=defaults)
        super().__init__(path.stem, space, objective["direction"] == "minimize")
        self.rows: dict[tuple, list[float | None]] = defaultdict(list)
        table = path.with_suffix(".csv")
        for config, value in read_rows(
            table, list(domains), objective["metric"], lambda row: self._typed(domains, row, bools)
        ):
            self.rows[space.key(config)].append(value)
        grid = math.prod(len(d.values() or []) for d in domains.values())
        if len(self.rows) < grid:  # a tuner asking for one would be told it failed: a cliff
            # that was never measured
            combos = itertools.product(*(d.values() or [] for d in domains.values()))
            first = next(
                c for c in combos if space.key(dict(zip(domains, c, strict=True))) not in self.rows
            )
            named = ", ".join(f"{n}={_text(v)}" for n, v in zip(domains, first, strict=True))
            raise TaskError(
                f"{table}: no row of {named}: every configuration of the grid needs one "
                f"({grid - len(self.rows)} of {grid} have none)"
            )
        for key, values in self.rows.items():
            ok = [v for v in values if v is not None]
            self.truths[key] = float(np.mean(ok)) if len(ok) * 2 >= len(values) else None
        if not any(t is not None for t in self.truths.values()):
            raise TaskError(f"{table}: {objective['metric']}: no configuration has a truth")

    @staticmethod
    def _typed(domains: dict, raw: dict[str, Any], bools: set[str]) -> Config:
        """A configuration from a row or the default; BadValue for a value
        that is not one of its knob's. `bools`: the bool knobs (one held at a single value is
        a categorical knob of its text)."""
        config: Config = {}
        for name, domain in domains.items():
            value = raw[name]
            text = str(value).strip()
            if name in bools:
                if text.lower() not in ("true", "false"):
                    raise BadValue(name, f"{text!r} is not True or False")
                flag = text.lower() == "true"
                config[name] = flag if isinstance(domain, Boolean) else str(flag)
                if not domain.contains(config[name]):
                    raise BadValue(name, f"{text!r} is not one of its values")
                continue
            try:  # a categorical value may begin or end in spaces, which parse() drops
                if isinstance(domain, Ordinal):
                    parsed = _choice(domain, text)
                else:
                    parsed = str(value) if domain.contains(str(value)) else domain.parse(text)
                    if not domain.contains(parsed):  # `true` unquoted in the YAML is True
                        parsed = _spelled(domain, text)
            except ValueError:
                parsed = None
            if parsed is None or not domain.contains(parsed):
                raise BadValue(name, f"{text!r} is not one of its values")
            config[name] = parsed
        return config

    def measure(self, config: Config, rng: np.random.Generator) -> float | None:
        rows = self.rows.get(self.space.key(config))
        return rows[int(rng.integers(len(rows)))] if rows else None

    def resolution(self) -> str:
        """How finely the rows pin the truth down, which says what "within 2 %" can mean here:
        the spread of a configuration's rows, the standard error of its mean, and how far the
        configurations nearest the optimum are from it."""
        from benchmarks.tuners.scoring import is_within  # scoring imports the harness

        spreads, counts, repeated = [], [], False
        for values in self.rows.values():
            ok = [v for v in values if v is not None]
            counts.append(len(values))
            repeated = repeated or len(ok) > 1
            if len(ok) > 1 and np.mean(ok):  # a mean of 0 (no errors) has no relative spread
                spreads.append(np.std(ok, ddof=1) / abs(np.mean(ok)))
        rows = float(np.median(counts))
        best = self.optimum()
        gaps = sorted(abs(t - best) / self.scale() for t in self.truths.values() if t is not None)
        within = sum(is_within(g, 0.02) for g in gaps)
        nearest = next((g for g in gaps if not is_within(g, 0.02)), None)
        closest = f"{within} configuration(s) within 2 % of the optimum, "
        closest += "no other." if nearest is None else f"the next at {100 * nearest:.1f} %."
        if not spreads:
            why = (
                "the configurations read twice or more have a mean of 0"
                if repeated
                else "no configuration has two successful readings"
            )
            return f"Noise: unknown ({why}); {closest}"
        cv = float(np.median(spreads))
        return (
            f"Noise: the rows of one configuration spread by {100 * cv:.1f} % (median CV), so "
            f"a truth (the mean of {rows:.0f} rows) is known to about "
            f"{100 * cv / np.sqrt(rows):.1f} %; {closest}"
        )

    def truth(self, config: Config) -> float | None:
        return self.truths.get(self.space.key(config))


def _text(value: Any) -> str:
    """A knob's value as a message names it: a text that is empty or holds a space, a comma
    or an `=` quoted, so the list of a configuration's values reads unambiguously."""
    text = str(value)
    plain = text and not any(c.isspace() or c in ",=" for c in text)
    return text if plain or not isinstance(value, str) else repr(text)


def _alike(numbers: list) -> tuple[float, float] | None:
    """Two different values that a configuration's key (SearchSpace.key: floats rounded to 10
    decimals, against print noise) makes one, e.g. 1e-12 and 2e-12, or None."""
    seen: dict[float, float] = {}
    for number in sorted(set(numbers)):
        key = round(number, 10) if isinstance(number, float) else number
        if key in seen:
            return seen[key], number
        seen[key] = number
    return None


def _choice(domain: Ordinal, text: str) -> int | float:
    """The value of a numeric knob that a cell names: the one equal to it, else the one within
    print noise of it (`0.30000000000000004`). Print noise alone, relative 1e-9, took the rows of
    2147483648 for 2147483647's and left 2147483648 without a row."""
    try:
        number: int | float = int(text)  # exact, past 2**53 too
    except ValueError:
        number = float(text)
    if number in domain.choices:
        return domain.choices[domain.choices.index(number)]
    return domain.parse(text)


def _spelled(domain: Categorical, text: str) -> str | None:
    """The categorical value `true` or `false` in another case: the format writes booleans
    `True` / `False` in the CSV, and a YAML holds what was typed, `[true, false]`."""
    word = text.lower()
    if word not in ("true", "false"):
        return None
    return next((c for c in domain.choices if c.lower() == word), None)


def _flag(value: Any) -> bool | None:
    """A bool knob's value as the YAML writes it (true, True), or None."""
    text = str(value).strip().lower()
    return text == "true" if text in ("true", "false") else None


def _number(value: Any, kind: str) -> int | float | None:
    """A numeric knob's value from its text (`010` is 10, `1e3` 1000), or None if it is not
    one; a whole number is read exactly, past 2**53 too."""
    text = str(value).strip()
    try:
        number: int | float = int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            return None
    if not math.isfinite(number):
        return None
    if kind == "int":
        return int(number) if float(number).is_integer() else None
    return number


class SyntheticTask(Task):
    """A server-like response surface on a grid of knobs, with noise and a failure cliff."""

    def __init__(self, name: str, knobs: int, noise: float, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        domains: dict[str, Any] = {}
        for i in range(knobs):
            kind = i % 5
            if kind == 0:
                domains[f"threads{i}"] = IntRange(1, 32)
            elif kind == 1:
                domains[f"buffer{i}"] = Ordinal((4, 8, 16, 32, 64, 128, 256, 512, 1024))
            elif kind == 2:
                domains[f"mode{i}"] = Categorical(("a", "b", "c", "d"))
            elif kind == 3:
                domains[f"flag{i}"] = Boolean()
            else:
                domains[f"timeout{i}"] = FloatRange(0.01, 100.0, log=True)
        space = SearchSpace(domains)
        space.defaults = {n: d.from_unit(0.3) for n, d in domains.items()}
        super().__init__(name, space, minimize=False)
        self.noise = noise
        # Only about half the knobs matter; each has its own optimum position.
        self.weights = {n: (rng.uniform(0.5, 2.0) if rng.random() < 0.6 else 0.0) for n in domains}
        self.targets = {n: rng.uniform(0.15, 0.85) for n in domains}
        self.best_mode = {n: str(rng.choice(["a", "b", "c", "d"])) for n in domains}
        names = list(domains)
        self.pair = (names[0], names[1 % len(names)])  # an interaction
        self._grid_truths(rng)

    def _raw(self, config: Config) -> float | None:
        total = 0.0
        for name, domain in self.space:
            weight = self.weights[name]
            value = config[name]
            if isinstance(domain, Categorical):
                total += weight * (1.0 if value == self.best_mode[name] else 0.3)
            elif isinstance(domain, Boolean):
                total += weight * (1.0 if value else 0.5)
            else:
                total += weight * math.exp(
                    -((domain.to_unit(value) - self.targets[name]) ** 2) / 0.08
                )
        a, b = self.pair
        total += (
            0.5
            * self.space.domains[a].to_unit(config[a])
            * self.space.domains[b].to_unit(config[b])
        )
        # The cliff: too many threads with the biggest buffers and the server falls over.
        first = next(iter(self.space.domains))
        if self.space.domains[first].to_unit(config[first]) > 0.9 and total > 0:
            buffers = [n for n in self.space.domains if n.startswith("buffer")]
            if buffers and self.space.domains[buffers[0]].to_unit(config[buffers[0]]) > 0.7:
                return None
        return 100.0 * (1.0 + total)

    def _grid_truths(self, rng: np.random.Generator) -> None:
        """The optimum by dense sampling plus local polishing (the grid is too big to list)."""
        best_key, best = None, -math.inf
        for _ in range(20000):
            config = self.space.sample(rng)
            value = self._raw(config)
            if value is not None and value > best:
                best_key, best = config, value
        assert best_key is not None
        improved = True
        while improved:
            improved = False
            for name, domain in self.space:
                for v in domain.values() or domain.grid(201):
                    candidate = {**best_key, name: v}
                    value = self._raw(candidate)
                    if value is not None and value > best + 1e-12:
                        best_key, best, improved = candidate, value, True
        self.truths = {self.space.key(best_key): best, ("default",): self._raw(self.space.defaults)}

    def measure(self, config: Config, rng: np.random.Generator) -> float | None:
        value = self._raw(config)
        return None if value is None else value * (1 + self.noise * rng.normal())

    def truth(self, config: Config) -> float | None:
        return self._raw(config)


#: The synthetic tasks: name, knobs, noise (CV), seed. The first alone is in --quick.
SYNTHETIC = (
    ("synthetic-8-knobs-3%", 8, 0.03, 1),
    ("synthetic-16-knobs-6%", 16, 0.06, 2),
    ("synthetic-4-knobs-10%", 4, 0.10, 3),
    ("synthetic-30-knobs-5%", 30, 0.05, 4),
)


def default_tasks(tasks_dir: Path, quick: bool, names: Collection[str] | None = None) -> list[Task]:
    """The synthetic, COCO and measured tasks; of the synthetic ones only those in `names` when
    given (each finds its optimum on its grid as it is made: seconds for the four)."""
    synthetic = SYNTHETIC[:1] if quick else SYNTHETIC
    tasks: list[Task] = [
        SyntheticTask(name, knobs, noise, seed)
        for name, knobs, noise, seed in synthetic
        if names is None or name in names
    ]
    from benchmarks.tuners.coco import coco_tasks

    tasks += coco_tasks(quick)
    tasks += [TabularTask(p) for p in sorted(tasks_dir.glob("*.yaml"))]
    return tasks
