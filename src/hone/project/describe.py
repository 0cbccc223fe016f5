"""A project as plain data, for `hone check --json`: what its knobs are and how they are set,
the benchmark, the goal and the tuning settings, in the shapes a script reads."""

from __future__ import annotations

from typing import Any

from hone.project.model import FeatureFilter, Knob, Metric, Project, Tuning
from hone.space.serialize import domain_to_dict


def knob_data(knob: Knob) -> dict[str, Any]:
    return {
        "name": knob.name,
        "domain": domain_to_dict(knob.domain),
        "range": knob.domain.describe(),
        "set_by": knob.actuator.describe(),
        "restart": knob.restart,
        "reference": knob.reference,
        "risk": knob.risk.to_dict() if knob.risk else None,
        "group": knob.group,
    }


def goal_data(metrics: list[Metric]) -> list[dict[str, Any]]:
    return [
        {
            "name": m.name,
            "direction": m.direction,
            "weight": m.weight,
            "limit": str(m.limit) if m.limit else None,
            "unit": m.unit,
        }
        for m in metrics
    ]


def tuning_data(tuning: Tuning) -> dict[str, Any]:
    return {
        "engine": tuning.engine,
        "budget": tuning.budget,
        "baseline": tuning.baseline_repeats,
        "confirm_candidates": tuning.confirm_candidates,
        "confirm_rounds": tuning.confirm_rounds,
        "apply": tuning.apply,
        "start": [dict(point) for point in tuning.start],
        "random_starts": tuning.random_starts,
        "split_count": tuning.split_count,
        "objective": tuning.objective,
        "seed": tuning.seed,
        "select": select_data(tuning.feature_filter),
    }


def select_data(selector: FeatureFilter | None) -> dict[str, int] | None:
    """The knob selection (A-Tune's feature_filter_*) as hone's `select`: how many knobs are
    kept, and after how many trials (0: half the budget)."""
    if selector is None:
        return None
    return {"count": selector.count, "trials": selector.iterations}


def project_data(project: Project) -> dict[str, Any]:
    return {
        "project": project.name,
        "sources": [str(source) for source in project.sources],
        "knobs": [knob_data(knob) for knob in project.knobs],
        "constraints": [constraint.expression for constraint in project.constraints],
        "groups": {
            group: {name: project.hosts[name].target() for name in names}
            for group, names in project.groups.items()
        },
        "benchmark": {"command": project.benchmark.command, "host": project.benchmark.host},
        "goal": goal_data(project.metrics),
        "tuning": tuning_data(project.tuning),
    }
