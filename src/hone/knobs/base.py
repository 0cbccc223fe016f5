"""The actuator interface and the registry of actuator kinds."""

from __future__ import annotations

import importlib
import pkgutil
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

from hone.errors import ActuationError

_REGISTRY: dict[str, type[Actuator]] = {}


def register(cls: type[Actuator]) -> type[Actuator]:
    """Class decorator: make an actuator kind available by its `kind` name."""
    _REGISTRY[cls.kind] = cls
    return cls


class Actuator(ABC):
    """Reads and writes one setting. Values travel as text, exactly as the system shows them."""

    kind: ClassVar[str]
    #: True when a new value only takes effect after the workload restarts.
    needs_restart: ClassVar[bool] = False
    #: False when the setting dies with the process hone starts (a flag, an environment
    #: variable): such knobs need no restore after a crash.
    persistent: ClassVar[bool] = True

    @abstractmethod
    def get(self) -> str:
        """The current value as text; ActuationError when it cannot be read."""

    @abstractmethod
    def set(self, value: str) -> None:
        """Write the value; ActuationError with the reason when the system refuses it."""

    @abstractmethod
    def spec(self) -> dict[str, Any]:
        """A JSON-able description from which `actuator_from_spec` rebuilds this actuator
        (stored in the journal so that `restore` needs no project file)."""

    @property
    def readable(self) -> bool:
        """False for write-only actuators (a shell knob without `get`)."""
        return True

    def normalise(self, text: str) -> str:
        """How a value read back is compared with the value written."""
        return " ".join(str(text).split())

    def verify(self, value: str) -> None:
        """Read the value back and fail when it is not what was written."""
        if not self.readable:
            return
        actual = self.get()
        if not equal_values(self.normalise(actual), self.normalise(value)):
            raise ActuationError(
                f"wrote {value!r} but reads back {actual.strip()!r}", key=self.describe()
            )

    def setting(self) -> str | None:
        """What this actuator changes, named so that two actuators of one setting (a sysctl, a
        file, a unit) compare equal: hone lets one process at a time change it. None when it
        cannot be named (a shell command) or dies with hone's process."""
        return None

    def check_value(self, value: str) -> None:
        """ActuationError when this value must never be written by this actuator (checked
        before anything changes, for values read from the system as for proposed ones)."""
        return None  # most actuators can write any text

    def created_path(self) -> str | None:
        """The path the first write would create, when the setting's file (or a folder on the
        way to it) does not exist yet; None when nothing would be created. The journal records
        it with the original, and restore removes it again once it is empty: a file that was
        absent before hone is absent after."""
        return None

    def check_writable(self) -> None:
        """ActuationError when every write is sure to fail (a read-only file system, an
        immutable file): found before a run changes anything, not at its first trial."""
        return None

    def apply(self, value: str) -> None:
        """Set, then verify: the one call the tuning loop and profiles use."""
        self.check_value(value)
        self.set(value)
        self.verify(value)

    def describe(self) -> str:
        detail = ", ".join(f"{k}={v}" for k, v in self.spec().items() if k != "kind")
        return f"{self.kind}({detail})"


def equal_values(a: str, b: str) -> bool:
    """Equal as text, or as numbers (`1` and `1.0`): two values a knob holds, each already
    normalised as the comparison wants (an actuator's `normalise`, a risk's case folding)."""
    if a == b:
        return True
    try:
        return float(a) == float(b)
    except ValueError:
        return False


def actuator_kinds() -> dict[str, type[Actuator]]:
    """Every registered kind, importing each module of this package once."""
    if not _REGISTRY or len(_REGISTRY) < len(_modules()):
        for name in _modules():
            importlib.import_module(f"{__package__}.{name}")
    return dict(_REGISTRY)


def _modules() -> list[str]:
    import hone.knobs as package

    return [
        m.name for m in pkgutil.iter_modules(package.__path__) if m.name not in ("base", "risk")
    ]


def actuator_from_spec(spec: Mapping[str, Any], **context: Any) -> Actuator:
    """Build an actuator from its spec (`{"kind": "sysctl", "key": "vm.swappiness"}`).

    `context` holds run-time objects (the `launch` of a process hone starts) that a kind
    receives when it declares a field of that name, and that other kinds ignore."""
    kinds = actuator_kinds()
    kind = spec.get("kind")
    if kind not in kinds:
        known = ", ".join(sorted(kinds))
        raise ActuationError(f"unknown knob kind {kind!r} (known: {known})", key="kind")
    cls = kinds[kind]
    fields = getattr(cls, "__dataclass_fields__", {})
    options = {k: v for k, v in spec.items() if k != "kind"}
    options.update({k: v for k, v in context.items() if k in fields})
    try:
        return cls(**options)
    except TypeError as exc:
        raise ActuationError(f"bad options for a {kind} knob: {exc}", key=kind) from None
