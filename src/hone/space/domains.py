"""Knob domains. Numeric domains keep their order (unlike A-Tune, which turns discrete numeric
knobs into unordered categories), so a model can learn that 1024 lies between 512 and 2048."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

Value = int | float | str | bool


class Domain(ABC):
    """The values one knob may take, with a map onto [0, 1] for optimisers."""

    ordered: bool = True

    @abstractmethod
    def contains(self, value: Value) -> bool: ...

    @abstractmethod
    def parse(self, text: str) -> Value:
        """Read a value as printed by a `get` command or written in a file; ValueError if not."""

    def format(self, value: Value) -> str:
        """The text handed to an actuator."""
        return str(value)

    @abstractmethod
    def to_unit(self, value: Value) -> float:
        """Position in [0, 1]; for categories the index scaled into [0, 1]."""

    @abstractmethod
    def from_unit(self, u: float) -> Value:
        """The value nearest to position u in [0, 1]."""

    def values(self) -> list[Value] | None:
        """Every value when the domain is finite and small enough to list, else None."""
        return None

    def grid(self, n: int) -> list[Value]:
        """Up to n values spread evenly over the domain (for lhs, abtest, grid search)."""
        finite = self.values()
        if finite is not None and len(finite) <= n:
            return list(finite)
        points = [self.from_unit(i / (n - 1)) for i in range(n)] if n > 1 else [self.from_unit(0.5)]
        return list(dict.fromkeys(points))

    def describe(self) -> str:
        return type(self).__name__


def _unit(x: float, low: float, high: float, log: bool) -> float:
    if high == low:
        return 0.0
    if log:
        x, low, high = math.log(x), math.log(low), math.log(high)
    return min(1.0, max(0.0, (x - low) / (high - low)))


def _from_unit(u: float, low: float, high: float, log: bool) -> float:
    u = min(1.0, max(0.0, u))
    if log:
        return math.exp(math.log(low) + u * (math.log(high) - math.log(low)))
    return low + u * (high - low)


#: The largest magnitude a numeric knob may take: beyond it floats lose whole numbers and a
#: unit-interval position loses meaning.
LIMIT = 1e15


def _finite(*numbers: float | None) -> None:
    for x in numbers:
        if x is not None and not (math.isfinite(x) and abs(x) <= LIMIT):
            raise ValueError(f"{x!r} is not a finite number within +-{LIMIT:g}")


@dataclass(frozen=True)
class IntRange(Domain):
    low: int
    high: int
    step: int = 1
    log: bool = False

    def __post_init__(self) -> None:
        _finite(self.low, self.high, self.step)
        if self.high < self.low:
            raise ValueError(f"range [{self.low}, {self.high}] is empty")
        if self.step < 1:
            raise ValueError(f"step {self.step} must be >= 1")
        if self.log and self.low <= 0:
            raise ValueError("a log-scale range must be positive")

    def contains(self, value: Value) -> bool:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if not math.isfinite(value) or value != int(value):  # int(nan) raised, mid-load
            return False
        return self.low <= value <= self.high and (int(value) - self.low) % self.step == 0

    def parse(self, text: str) -> int:
        number = float(str(text).strip())
        if not math.isfinite(number) or number != int(number):  # int(inf): OverflowError
            raise ValueError(f"{text!r} is not an integer")
        return int(number)

    def _snap(self, x: float) -> int:
        k = round((x - self.low) / self.step)
        top = (self.high - self.low) // self.step
        return self.low + min(max(k, 0), top) * self.step

    def to_unit(self, value: Value) -> float:
        return _unit(float(value), self.low, self.high, self.log)

    def from_unit(self, u: float) -> int:
        return self._snap(_from_unit(u, self.low, self.high, self.log))

    def values(self) -> list[Value] | None:
        count = (self.high - self.low) // self.step + 1
        return list(range(self.low, self.high + 1, self.step)) if count <= 4096 else None

    def describe(self) -> str:
        extra = (f" step {self.step}" if self.step != 1 else "") + (" log" if self.log else "")
        return f"int [{self.low}, {self.high}]{extra}"


@dataclass(frozen=True)
class FloatRange(Domain):
    low: float
    high: float
    step: float | None = None
    log: bool = False

    def __post_init__(self) -> None:
        _finite(self.low, self.high, self.step)
        if self.high < self.low:
            raise ValueError(f"range [{self.low}, {self.high}] is empty")
        if self.step is not None and self.step <= 0:
            raise ValueError(f"step {self.step} must be > 0")
        if self.log and self.low <= 0:
            raise ValueError("a log-scale range must be positive")

    def contains(self, value: Value) -> bool:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        return self.low - 1e-12 <= value <= self.high + 1e-12

    def parse(self, text: str) -> float:
        return float(str(text).strip())

    def format(self, value: Value) -> str:
        return repr(float(value)) if not float(value).is_integer() else str(float(value))

    def to_unit(self, value: Value) -> float:
        return _unit(float(value), self.low, self.high, self.log)

    def from_unit(self, u: float) -> float:
        x = _from_unit(u, self.low, self.high, self.log)
        if self.step:
            k = round((x - self.low) / self.step)
            x = min(self.high, self.low + k * self.step)
            x = round(x, 12)
        return x

    def values(self) -> list[Value] | None:
        if not self.step:
            return None
        count = math.floor((self.high - self.low) / self.step + 1e-9) + 1
        if count > 4096:
            return None
        return [round(self.low + i * self.step, 12) for i in range(count)]

    def describe(self) -> str:
        extra = (f" step {self.step:g}" if self.step else "") + (" log" if self.log else "")
        return f"float [{self.low:g}, {self.high:g}]{extra}"


@dataclass(frozen=True)
class Ordinal(Domain):
    """An ordered list of numeric values, e.g. [64, 128, 512, 4096]. Positions are by rank."""

    choices: tuple[int | float, ...] = field(default=())

    def __post_init__(self) -> None:
        _finite(*(v for v in self.choices if isinstance(v, int | float)))
        if not self.choices:
            raise ValueError("an ordinal knob needs at least one value")
        object.__setattr__(self, "choices", tuple(sorted(set(self.choices))))

    def contains(self, value: Value) -> bool:
        return not isinstance(value, bool) and value in self.choices

    def parse(self, text: str) -> int | float:
        number = float(str(text).strip())
        for choice in self.choices:
            if math.isclose(choice, number, rel_tol=1e-9, abs_tol=1e-12):
                return choice
        return int(number) if number.is_integer() else number

    def to_unit(self, value: Value) -> float:
        if len(self.choices) == 1:
            return 0.0
        if value in self.choices:
            return self.choices.index(value) / (len(self.choices) - 1)
        nearest = min(range(len(self.choices)), key=lambda i: abs(self.choices[i] - float(value)))
        return nearest / (len(self.choices) - 1)

    def from_unit(self, u: float) -> int | float:
        index = round(min(1.0, max(0.0, u)) * (len(self.choices) - 1))
        return self.choices[index]

    def values(self) -> list[Value]:
        return list(self.choices)

    def describe(self) -> str:
        shown = ", ".join(f"{c:g}" for c in self.choices[:8])
        more = ", ..." if len(self.choices) > 8 else ""
        return f"ordinal {{{shown}{more}}} ({len(self.choices)} values)"


@dataclass(frozen=True)
class Categorical(Domain):
    """Unordered string choices."""

    choices: tuple[str, ...] = field(default=())
    ordered = False

    def __post_init__(self) -> None:
        if not self.choices:
            raise ValueError("a categorical knob needs at least one option")
        object.__setattr__(self, "choices", tuple(dict.fromkeys(str(c) for c in self.choices)))

    def contains(self, value: Value) -> bool:
        return isinstance(value, str) and value in self.choices

    def parse(self, text: str) -> str:
        text = str(text).strip()
        if text in self.choices:
            return text
        for choice in self.choices:  # a get that prints "1.50" for option "1.5"
            try:
                if float(choice) == float(text):
                    return choice
            except ValueError:
                continue
        return text

    def to_unit(self, value: Value) -> float:
        if len(self.choices) == 1:
            return 0.0
        return self.choices.index(str(value)) / (len(self.choices) - 1)

    def from_unit(self, u: float) -> str:
        return self.choices[round(min(1.0, max(0.0, u)) * (len(self.choices) - 1))]

    def values(self) -> list[Value]:
        return list(self.choices)

    def describe(self) -> str:
        return "categorical {" + ", ".join(self.choices) + "}"


_TRUE = {"1", "true", "yes", "on", "y"}
_FALSE = {"0", "false", "no", "off", "n"}


@dataclass(frozen=True)
class Boolean(Domain):
    """Off/on. `on`/`off` strings say how the value is written for the actuator."""

    on: str = "1"
    off: str = "0"

    def contains(self, value: Value) -> bool:
        return isinstance(value, bool)

    def parse(self, text: str) -> bool:
        word = str(text).strip().lower()
        if word in (self.on.lower(), *_TRUE):
            return True
        if word in (self.off.lower(), *_FALSE):
            return False
        raise ValueError(f"{text!r} is not a boolean")

    def format(self, value: Value) -> str:
        return self.on if value else self.off

    def to_unit(self, value: Value) -> float:
        return 1.0 if value else 0.0

    def from_unit(self, u: float) -> bool:
        return u >= 0.5

    def values(self) -> list[Value]:
        return [False, True]

    def describe(self) -> str:
        return "bool"
