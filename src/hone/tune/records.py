"""What a study is given and what it gives back: the options of `hone tune`, one reading, the
result, and what the study database keeps of them."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from hone.errors import HoneError
from hone.knobs.risk import Risk
from hone.project.model import FeatureFilter, Limit, Project, Tuning
from hone.space import Config, Constraint
from hone.space.serialize import domain_to_dict
from hone.tune.risk import gain_dict
from hone.tune.stats import Gain

#: The error of a trial that was running when hone was stopped or killed.
CUT_OFF = "interrupted (hone was stopped)"


#: The most confirmation rounds when neither the command nor the study gives them.
MAX_REPEATS = 10


@dataclass
class TuneOptions:
    """What the command gives; None: not given, so the study's own setting when it is
    resumed (Tuner._keep_settings), else the project file's or the default."""

    engine: str | None = None
    budget: int | None = None
    baseline_repeats: int | None = None
    resume: bool = False
    apply: str | None = None  # auto | always | never
    seed: int | None = None
    storage: str | None = None
    #: Apply a winner that moves a knob onto a risky value (else: the best safe one).
    allow_risk: bool | None = None
    #: The gain (%) the confirmation must be able to see; rounds are raised for it.
    min_detectable: float | None = None
    #: The most confirmation rounds: for --min-detectable and for close calls (MAX_REPEATS).
    max_repeats: int | None = None
    #: Profile the baseline and the winner (why.py): None = when perf can record here.
    why: bool | None = None


#: The options a study records (attrs["options"]) and a resumed run keeps unless given.
KEPT_OPTIONS = ("allow_risk", "min_detectable", "max_repeats", "why")
#: The project file's `tuning:` settings a study records (attrs["tuning"]) and a resumed run
#: or a joining worker keeps (baseline runs and seed: unless the resuming command gives them);
#: engine, budget and apply policy are recorded as attrs of their own. With them, every
#: `tuning:` key: each changes the search or the decision.
KEPT_TUNING = (
    "baseline_repeats",
    "seed",
    "random_starts",
    "split_count",
    "confirm_candidates",
    "confirm_rounds",
    "objective",
    "start",
    "feature_filter",
)


@dataclass
class Measurement:
    config: Config
    metrics: dict[str, float] = field(default_factory=dict)
    score: float | None = None
    error: str | None = None
    #: The machine while the benchmark ran (machine.Watch.state) and why it was disturbed.
    machine: dict[str, Any] = field(default_factory=dict)
    disturbed: str | None = None
    #: The first reading after the workload (re)started (warmup.py checks it).
    after_restart: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and self.score is not None


#: Baseline readings not recorded yet: (trial id, reading).
Pending = list[tuple[int, Measurement]]


@dataclass
class TuneResult:
    study: str
    baseline: Config
    baseline_metrics: dict[str, float]
    best: Config | None
    best_metrics: dict[str, float]
    gain: Gain | None
    outcome: str  # applied | restored
    reason: str
    trials: int
    failures: int
    elapsed: float
    #: Set when the best confirmed configuration was risky: both gains (risk.Choice.record).
    risk: dict[str, Any] | None = None
    #: Readings taken while the machine was disturbed (each measured again once).
    disturbed: int = 0
    confirm_rounds: int = 0
    #: First readings after a restart left out as a warm-up transient (each measured again).
    warmup: int = 0
    #: Workload (re)starts by stage: restarts cost time and disturb a service.
    restarts: dict[str, int] = field(default_factory=dict)
    #: The baseline's mean in the confirmation rounds: what best_metrics and the gain are
    #: measured against (the baseline phase ran earlier, under another load of the machine).
    confirm_baseline_metrics: dict[str, float] = field(default_factory=dict)


def tuning_attrs(tuning: Tuning) -> dict[str, Any]:
    """The `tuning:` settings a study records, as JSON."""
    recorded = {key: getattr(tuning, key) for key in KEPT_TUNING}
    selector = tuning.feature_filter
    recorded["feature_filter"] = None if selector is None else asdict(selector)
    return recorded


def recorded_tuning(attrs: dict[str, Any]) -> dict[str, Any]:
    """The `tuning:` settings a study recorded, as Tuning takes them; one recorded before a
    key was kept lacks it (the project file's then)."""
    recorded = attrs.get("tuning") or {}
    kept = {key: recorded[key] for key in KEPT_TUNING if key in recorded}
    if isinstance(kept.get("feature_filter"), dict):
        kept["feature_filter"] = FeatureFilter(**kept["feature_filter"])
    return kept


def project_attrs(project: Project) -> dict[str, Any]:
    """What a study stores of its project: sources, metrics, knobs and their domains, and the
    rules its trials are judged by (keep_rules reads them back)."""
    return {
        "sources": [str(s) for s in project.sources],
        "metrics": [
            {"name": m.name, "direction": m.direction, "weight": m.weight, "unit": m.unit}
            for m in project.metrics
        ],
        "knobs": {k.name: k.domain.describe() for k in project.knobs},
        "space": {k.name: domain_to_dict(k.domain) for k in project.knobs},
        "constraints": [c.expression for c in project.constraints],
        "limits": {m.name: asdict(m.limit) for m in project.metrics if m.limit is not None},
        "risks": {k.name: k.risk.record() for k in project.knobs if k.risk is not None},
    }


def keep_rules(project: Project, attrs: dict[str, Any]) -> list[str]:
    """A resumed or joined study judges every trial by the rules it was created with, not by
    a project file edited since: its constraints and metric limits replace the file's, and a
    knob is risky where either marks it (going on with a study never loosens a safety mark).
    A rule the study did not record (created before they were kept) is the file's. Changes
    `project`; returns the rules the file states otherwise, in words."""
    differ = []
    if "constraints" in attrs:
        kept = list(attrs["constraints"])
        if kept != [c.expression for c in project.constraints]:
            differ.append("constraints")
            known = {k.name for k in project.knobs}
            try:
                project.constraints = [Constraint.parse(text, known) for text in kept]
            except ValueError as exc:
                raise HoneError(f"the study's recorded constraints: {exc}") from None
    if "limits" in attrs:
        for metric in project.metrics:
            recorded = attrs["limits"].get(metric.name)
            limit = Limit(**recorded) if recorded else None
            if limit != metric.limit:
                differ.append(f"limit of {metric.name}")
                metric.limit = limit
    for knob in project.knobs if "risks" in attrs else []:
        recorded = attrs["risks"].get(knob.name)
        if not recorded:
            continue
        risk = Risk.recorded(recorded)
        joined = risk if knob.risk is None else knob.risk.joined(risk)
        if knob.risk is None or joined.to_dict() != knob.risk.to_dict():
            differ.append(f"risk of {knob.name}")
        knob.risk = joined
    return differ


def rules_warning(differ: list[str], study: str) -> str:
    """The line that says a study's rules went before the project file's."""
    risky = any(rule.startswith("risk of ") for rule in differ)
    return f"{', '.join(differ)} of this project file not used: {study} keeps those it was " + (
        "created with (a knob marked risky in either stays risky)" if risky else "created with"
    )


def result_attrs(result: TuneResult) -> dict[str, Any]:
    """What a finished study stores of its result."""
    return {
        "outcome": result.outcome,
        "reason": result.reason,
        "best": result.best,
        "best_metrics": result.best_metrics,
        "confirm_baseline_metrics": result.confirm_baseline_metrics,
        "gain": gain_dict(result.gain),
        "risk": result.risk,
        "disturbed": result.disturbed,
        "warmup": result.warmup,
        "confirm_rounds": result.confirm_rounds,
        "restarts": result.restarts,
        "trials": result.trials,
        "failures": result.failures,
        "elapsed": round(result.elapsed, 1),
    }
