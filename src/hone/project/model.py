"""The one in-memory model of a tuning project, whichever file format it came from."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from hone.cluster.ssh import Host
from hone.cluster.workload import HostWorkload
from hone.errors import HoneError
from hone.knobs import Actuator
from hone.knobs.risk import Risk
from hone.space import Constraint, Domain, SearchSpace, Value
from hone.workload.launch import LaunchSpec

Direction = Literal["maximize", "minimize"]
ApplyPolicy = Literal["auto", "always", "never"]

_LIMIT = re.compile(r"^\s*(<=|>=|<|>|==)\s*([-+0-9.eE]+)\s*$")
_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "<": operator.lt,
    ">": operator.gt,
    "==": operator.eq,
}


@dataclass(frozen=True)
class Limit:
    """A bound a metric must respect for a trial to count, e.g. `p99 <= 5`."""

    op: str
    bound: float

    @classmethod
    def parse(cls, text: str) -> Limit:
        match = _LIMIT.match(str(text))
        if not match:
            raise ValueError(f"limit {text!r} must look like '<= 5' (one of <=, >=, <, >, ==)")
        return cls(match.group(1), float(match.group(2)))

    def holds(self, value: float) -> bool:
        return _OPS[self.op](value, self.bound)

    def __str__(self) -> str:
        return f"{self.op} {self.bound:g}"


@dataclass
class Knob:
    name: str
    domain: Domain
    actuator: Actuator
    restart: bool = False
    #: The reference value (A-Tune `ref`, hone `default`); else the value read at start.
    reference: Value | None = None
    description: str = ""
    #: Values that trade safety for speed (the project's `risk`, else the catalogue's).
    risk: Risk | None = None
    #: The host group the knob is set on (cluster projects), else this machine.
    group: str | None = None
    #: Where the project file says how it is set (file, line, key): a setting the machine
    #: cannot read or write stops the run with the line that names it.
    source: tuple[str | None, int | None, str] | None = None

    def located(self, error: HoneError) -> HoneError:
        """An error of its setting as one line naming the project file, line and key."""
        file, line, key = self.source or (None, None, None)
        what = f"{error.key}: " if error.key and error.key != self.name else ""
        message = f"knob {self.name!r}: {what}{error.message}"
        return type(error)(message, file=file, line=line, key=key)

    def text(self, value: Value) -> str:
        """A value as the knob's setting shows it (`off`, not False)."""
        return value if isinstance(value, str) else self.domain.format(value)


@dataclass
class Metric:
    """A number taken from the benchmark's output, by regex or by an A-Tune `$out` command."""

    name: str
    direction: Direction
    pattern: str | None = None
    command: str | None = None
    weight: float = 1.0
    limit: Limit | None = None
    #: How the figure is printed after its number (`tps`, `ms`); not used in any computation.
    unit: str = ""
    #: Read on this host of the cluster by `command`, after the benchmark (cluster projects).
    host: str | None = None
    #: Read on every host of this group, combined by `aggregate` (sum, mean, max, min).
    group: str | None = None
    aggregate: str | None = None
    #: Read before and after the benchmark: the metric is the difference (a /proc counter).
    delta: bool = False

    @property
    def remote(self) -> bool:
        """Read on hosts of the cluster, not from the benchmark's output."""
        return self.host is not None or self.group is not None

    @property
    def sign(self) -> float:
        """+1 when larger is better."""
        return 1.0 if self.direction == "maximize" else -1.0


@dataclass
class Benchmark:
    command: str
    timeout: float = 600.0
    #: Runs per trial; the trial's figure is their mean.
    repeats: int = 1
    #: Run once, unrecorded, after every (re)start of the workload.
    warmup: bool = False
    #: The host it runs on (cluster projects), else this machine.
    host: str | None = None


@dataclass
class Workload:
    """How the thing under test is (re)started. Empty when no knob needs a restart."""

    #: Run once at the start of a run, before anything is read or changed (data directories,
    #: config files, initdb): its failure stops the run with nothing changed.
    setup: str | None = None
    start: str | None = None
    stop: str | None = None
    launch: LaunchSpec | None = None
    ready: str | None = None
    ready_timeout: float = 60.0
    #: hone started it for this run and stops it at the end (else a service left running).
    owned: bool = False

    @property
    def managed(self) -> bool:
        return bool(self.start or self.launch)


@dataclass
class FeatureFilter:
    """A-Tune's parameter-selection stage: shrink the space to the knobs that matter."""

    engine: str = "lhs"
    cycle: int = 0
    iterations: int = 0
    count: int = 0


@dataclass
class Tuning:
    engine: str = "auto"
    budget: int = 30
    baseline_repeats: int = 3
    random_starts: int | None = None
    split_count: int | None = None
    confirm_candidates: int = 3
    confirm_rounds: int = 3
    apply: ApplyPolicy = "auto"
    #: "weighted": weighted relative improvement; "atune": A-Tune's combined figure.
    objective: Literal["weighted", "atune"] = "weighted"
    seed: int | None = None
    feature_filter: FeatureFilter | None = None
    #: Configurations measured first, in order, before the optimiser proposes any (a static
    #: profile's values, say); each names some knobs, the others keep the baseline's values.
    start: list[dict[str, Value]] = field(default_factory=list)


@dataclass
class Project:
    name: str
    knobs: list[Knob]
    benchmark: Benchmark
    metrics: list[Metric]
    directory: Path
    sources: list[Path]
    workload: Workload = field(default_factory=Workload)
    tuning: Tuning = field(default_factory=Tuning)
    constraints: list[Constraint] = field(default_factory=list)
    description: str = ""
    #: Cluster projects: every host by name, and every group's host names.
    hosts: dict[str, Host] = field(default_factory=dict)
    groups: dict[str, list[str]] = field(default_factory=dict)
    #: A group's workload, (re)started on each of its hosts when a knob needs it.
    group_workloads: dict[str, HostWorkload] = field(default_factory=dict)

    def knob(self, name: str) -> Knob:
        return next(k for k in self.knobs if k.name == name)

    def space(self, defaults: dict[str, Value] | None = None) -> SearchSpace:
        """The search space; `defaults` (values read from the system) fill missing references,
        each only where its knob's domain holds it (no reference outside the space)."""
        chosen = {k.name: k.reference for k in self.knobs if k.reference is not None}
        for name, value in (defaults or {}).items():
            if self.knob(name).domain.contains(value):
                chosen.setdefault(name, value)
        return SearchSpace({k.name: k.domain for k in self.knobs}, list(self.constraints), chosen)
