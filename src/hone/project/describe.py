"""A project as plain data, for `hone check --json`: what its knobs are and how they are set,
the benchmark, the goal and the tuning settings, in the shapes a script reads."""

from __future__ import annotations

from typing import Any

from hone.project.model import Knob, Metric, Project, Tuning
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
    }


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
