"""One analysis: sample the machine for a while, name the workload class with its confidence
and the features behind it, and the bottleneck in USE terms."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from hone.analyze import use
from hone.analyze.features import WINDOW_SECONDS, row_features, window_features
from hone.analyze.model import Model, default_model
from hone.analyze.window import check_duration
from hone.collect import ATUNE_METRICS, Collector, Snapshot
from hone.errors import HoneError


@dataclass
class Analysis:
    cls: str
    confidence: float
    probabilities: dict[str, float]  # every class, highest first
    features: list[tuple[str, float, float]]  # (feature, this sample, typical), most telling first
    resources: list[use.Resource]
    bottleneck: use.Resource | None
    profile: str | None  # the profile mapped to the class
    samples: int
    busiest: list[tuple[str, int, float]] = field(default_factory=list)  # (name, pid, % CPU)
    model: str = "default"  # which model named the class: "default", or the given one's name
    hardware: bool = False  # whether that model uses hardware counters

    def to_dict(self) -> dict[str, Any]:
        """The document of `GET /api/analysis`, which `hone analyze --json` prints too: one
        shape for a script whether it asks the command line or the server."""
        return {
            "class": self.cls,
            "confidence": self.confidence,
            "probabilities": self.probabilities,
            "features": [
                {"name": name, "value": value, "typical": typical}
                for name, value, typical in self.features
            ],
            "resources": [{**asdict(r), "verdict": r.verdict} for r in self.resources],
            "bottleneck": self.bottleneck.name if self.bottleneck else None,
            "profile": self.profile,
            "samples": self.samples,
            "model": self.model,
            "hardware": self.hardware,
            "busiest": [{"name": n, "pid": pid, "cpu": cpu} for n, pid, cpu in self.busiest],
        }


def classify(model: Model, snapshots: list[Snapshot]) -> tuple[str, dict[str, float], np.ndarray]:
    """The class of a run of snapshots (their window features) and every class's probability."""
    values = np.array(
        [[s.metrics.get(name, np.nan) for name in ATUNE_METRICS] for s in snapshots], dtype=float
    )
    x = window_features(row_features(values, model.hardware))
    probabilities = model.probabilities(x)[0]
    ranked = sorted(zip(model.classes, probabilities, strict=True), key=lambda p: -p[1])
    return ranked[0][0], {c: float(p) for c, p in ranked}, x


def pick_model(counts: bool) -> Model:
    """hone's model for this machine: the one with hardware counters where the machine counts
    them (more accurate where it can be used), else the default one, which needs none."""
    if counts:
        try:
            return default_model(hardware=True)
        except HoneError:  # no training run has counters (A-Tune's dataset not found)
            pass
    return default_model()


def analyze(
    duration: float = WINDOW_SECONDS,
    interval: float = 1.0,
    *,
    model: Model | None = None,
    name: str = "custom",
    collector: Collector | None = None,
    stop: threading.Event | None = None,
) -> Analysis:
    """Sample for `duration` seconds every `interval` and analyse what was seen, with `model`
    (called `name` in the result) or else hone's model for this machine (`pick_model`). The
    models learn from windows of WINDOW_SECONDS; a shorter sample is a quicker, rougher look.
    `stop` ends the sampling early with a HoneError (a web client that went away)."""
    check_duration(duration, interval)
    own = collector is None
    collector = collector or Collector(top=5)
    try:
        counts = "PERF.STAT.IPC" not in collector.unavailable
        if model is None:
            model, name = pick_model(counts), "default"
        if model.hardware and not counts:
            raise HoneError("this model uses hardware counters, which this machine does not have")
        before = use.counters()
        snapshots = []
        for snapshot in collector.stream(interval, duration=duration):
            if stop is not None and stop.is_set():
                raise HoneError("analysis cancelled")
            snapshots.append(snapshot)
        after = use.counters()
    finally:
        if own:
            collector.close()
    result = explain(model, snapshots, before, after)
    result.model, result.hardware = name, model.hardware
    return result


def explain(
    model: Model, snapshots: list[Snapshot], before: dict[str, int], after: dict[str, int]
) -> Analysis:
    cls, probabilities, x = classify(model, snapshots)
    at = {name: i for i, name in enumerate(model.row_names)}
    features = [
        (name, float(x[at[name]]), float(model.medians[at[name]]))
        for name, _ in model.explain(x, cls)
    ]
    table = use.resources(snapshots, before, after)
    cpu: dict[tuple[str, int], float] = {}
    for snapshot in snapshots:
        for p in snapshot.processes:
            cpu[(p.name, p.pid)] = cpu.get((p.name, p.pid), 0.0) + p.cpu / len(snapshots)
    busiest = sorted(((k[0], k[1], v) for k, v in cpu.items()), key=lambda t: -t[2])[:5]
    return Analysis(
        cls,
        probabilities[cls],
        probabilities,
        features,
        table,
        use.bottleneck(table),
        model.profiles.get(cls),
        len(snapshots),
        busiest,
    )
