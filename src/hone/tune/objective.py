"""From measured metrics to one score (higher is better) and to the gain over the baseline."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from hone.project.model import Metric


class Objective:
    """One metric: its value, signed so that larger is better. Several: the weighted relative
    improvement over the baseline mean in percent (A-Tune's mode weights by percent)."""

    def __init__(self, metrics: Sequence[Metric], mode: str = "weighted") -> None:
        self.metrics = list(metrics)
        self.scored = [m for m in self.metrics if m.weight > 0]
        self.mode = mode
        self.baseline: dict[str, float] = {}

    @property
    def single(self) -> Metric | None:
        return self.scored[0] if len(self.scored) == 1 else None

    def set_baseline(self, samples: Sequence[Mapping[str, float]]) -> None:
        self.baseline = {
            m.name: float(np.mean([s[m.name] for s in samples if m.name in s]))
            for m in self.metrics
            if any(m.name in s for s in samples)
        }

    def violations(self, values: Mapping[str, float]) -> list[str]:
        """Limits that these values break, as readable reasons."""
        return [
            f"limit {m.name} {m.limit} broken ({values[m.name]:g})"
            for m in self.metrics
            if m.limit is not None and m.name in values and not m.limit.holds(values[m.name])
        ]

    def score(self, values: Mapping[str, float]) -> float:
        single = self.single
        if single is not None:
            return single.sign * values[single.name]
        total_weight = 100.0 if self.mode == "atune" else sum(m.weight for m in self.scored)
        return sum(m.weight / total_weight * self.relative(m, values[m.name]) for m in self.scored)

    def relative(self, metric: Metric, value: float) -> float:
        """Improvement of one metric over its baseline, in percent (positive is better)."""
        base = self.baseline.get(metric.name)
        if not base:
            return 0.0
        return metric.sign * (value - base) / abs(base) * 100.0

    def gain(self, score: float, baseline_score: float) -> float:
        """Improvement of a score over the baseline's, in percent."""
        if self.single is None:
            return score - baseline_score
        if baseline_score == 0:
            return 0.0
        return (score - baseline_score) / abs(baseline_score) * 100.0
