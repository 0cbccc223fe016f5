"""`hone convert`: write a loaded project (e.g. an A-Tune pair) in hone's single-file format."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml

from hone.knobs.shell import ShellActuator
from hone.paths import safe_name
from hone.project.describe import select_data
from hone.project.hone_format import NAME
from hone.project.model import Knob, Project
from hone.project.yamlio import CoreSafeDumper
from hone.space import Boolean, Categorical, Domain, FloatRange, IntRange, Ordinal


def to_hone_yaml(project: Project, destination: Path | None = None) -> str:
    """The project as hone YAML; paths are relative to `destination`'s folder when given."""
    base = destination.resolve().parent if destination else None
    directory = (
        os.path.relpath(project.directory, base) if base is not None else str(project.directory)
    )
    doc: dict[str, Any] = {"name": hone_name(project.name)}
    if project.description:
        doc["description"] = project.description
    doc["directory"] = directory
    workload = project.workload
    if workload.start or workload.stop:
        doc["workload"] = _given(
            start=workload.start,
            stop=workload.stop,
            ready=workload.ready,
            keep_running=not workload.owned,
        )
    doc["knobs"] = {knob.name: _knob(knob) for knob in project.knobs}
    if project.constraints:
        doc["constraints"] = [c.expression for c in project.constraints]
    doc["benchmark"] = {"command": project.benchmark.command}
    doc["metrics"] = {
        m.name: {
            **({"pattern": m.pattern} if m.pattern else {"command": m.command}),
            "direction": m.direction,
            "weight": m.weight,
            **({"limit": str(m.limit)} if m.limit else {}),
        }
        for m in project.metrics
    }
    tuning = project.tuning
    doc["tuning"] = _given(
        engine=tuning.engine,
        budget=tuning.budget,
        baseline=tuning.baseline_repeats,
        random_starts=tuning.random_starts,
        split_count=tuning.split_count,
        objective=tuning.objective,
        select=select_data(tuning.feature_filter),
    )
    text = yaml.dump(doc, Dumper=CoreSafeDumper, sort_keys=False, allow_unicode=True, width=100)
    if doc["name"] != project.name:
        said = json.dumps(project.name, ensure_ascii=False)
        text = f"# A-Tune's project name {said} spelt as a hone name\n{text}"
    return text


def hone_name(name: str) -> str:
    """A-Tune names a project with any text; hone's names are letters, digits, `_`, `.` and
    `-`, as they name files. Another is spelt as the work folder's is (safe_name: its plain
    characters and a digest of the exact name, which keeps two such names apart)."""
    return name if NAME.fullmatch(name) else safe_name(name).lstrip("_-.")


def _given(**fields: Any) -> dict[str, Any]:
    """The fields that have a value (None: the format's default, left out)."""
    return {key: value for key, value in fields.items() if value is not None}


def domain_entry(domain: Domain) -> dict[str, Any]:
    """The type and the range (or values) of a knob, as a hone project writes them."""
    entry: dict[str, Any] = {}
    if isinstance(domain, IntRange | FloatRange):
        entry["type"] = "int" if isinstance(domain, IntRange) else "float"
        entry["range"] = [domain.low, domain.high]
        if domain.step not in (None, 1) and domain.step > domain.high - domain.low:
            entry["range"] = [domain.low, domain.low]  # one value, as hone writes it
        elif domain.step not in (None, 1):
            entry["step"] = domain.step
        if domain.log:
            entry["log"] = True
    elif isinstance(domain, Ordinal):
        entry["type"], entry["values"] = "ordinal", list(domain.choices)
    elif isinstance(domain, Categorical):
        entry["type"], entry["values"] = "categorical", list(domain.choices)
    elif isinstance(domain, Boolean):
        entry.update(type="bool", on=domain.on, off=domain.off)
    return entry


def _knob(knob: Knob) -> dict[str, Any]:
    entry = domain_entry(knob.domain)
    if knob.reference is not None:
        entry["default"] = knob.reference
    if knob.restart:
        entry["restart"] = True
    if knob.description:
        entry["description"] = knob.description
    actuator = knob.actuator
    if isinstance(actuator, ShellActuator):
        entry["shell"] = {"get": actuator.get_command, "set": actuator.set_command}
    else:
        spec = actuator.spec()
        entry[spec.pop("kind")] = spec
    return entry
