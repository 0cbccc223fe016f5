"""`hone check`: a project's knobs, goal and tuning as hone reads them. Apart from the study
views: checking a project opens no study database, so it imports neither Optuna nor SQLAlchemy
(half a second of a `hone check`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from hone.errors import HoneError
from hone.output import DataTable, config_text, print_json

if TYPE_CHECKING:
    from hone.project.model import Knob, Metric


def check_project(
    console: Console,
    project: str | None,
    server: Path | None,
    client: Path | None,
    as_json: bool = False,
) -> None:
    """Print a project's knobs and goal; a single A-Tune file prints its own half. The project
    modules (YAML, the knob catalogue, A-Tune's formats) are imported here: `hone show`,
    `studies` and `report` only read the study database and need none of them."""
    from hone.project import atune
    from hone.project.describe import goal_data, knob_data, project_data, tuning_data
    from hone.project.hone_format import TOP_KEYS
    from hone.project.load import load_project
    from hone.project.yamlio import load_yaml

    if project and Path(project).is_file() and not (server or client):
        data = load_yaml(Path(project))
        if atune.is_server(data):
            name, knobs = atune.load_server(Path(project))[:2]
            if as_json:
                print_json(
                    {"atune": "server", "project": name, "knobs": list(map(knob_data, knobs))}
                )
                return
            console.print(f"A-Tune server file of project [bold]{escape(name)}[/]", markup=True)
            console.print(knob_table(knobs))
            return
        if atune.is_client(data):
            name, metrics, tuning, command = atune.load_client(Path(project))
            if as_json:
                print_json(
                    {
                        "atune": "client",
                        "project": name,
                        "benchmark": {"command": command, "host": None},
                        "goal": goal_data(metrics),
                        "tuning": tuning_data(tuning),
                    }
                )
                return
            console.print(f"A-Tune client file of project [bold]{escape(name)}[/]", markup=True)
            console.print(f"benchmark: {command}", markup=False)
            console.print(f"engine {tuning.engine}, {tuning.budget} iterations")
            console.print(goal_text(metrics), markup=False)
            return
        if data is None:
            raise HoneError("empty file: no project in it", file=project)
        # a file with hone's keys goes on to load_project, which names the key that is wrong
        if not (isinstance(data, dict) and set(TOP_KEYS) & set(data)):
            raise HoneError("not a hone project nor an A-Tune server or client file", file=project)
    loaded = load_project(project, server=server, client=client)
    if as_json:
        print_json(project_data(loaded))
        return
    sources = escape(", ".join(map(str, loaded.sources)))
    console.print(f"project [bold]{escape(loaded.name)}[/] ({sources})", markup=True)
    console.print(knob_table(loaded.knobs))
    for constraint in loaded.constraints:
        console.print(f"constraint: {constraint.expression}", markup=False)
    for group, names in loaded.groups.items():
        hosts = ", ".join(f"{n} ({loaded.hosts[n].target()})" for n in names)
        console.print(f"group {group}: {hosts}", markup=False)
        workload = loaded.group_workloads.get(group)
        if workload is not None:
            console.print(
                f"  workload: start {workload.start!r}, stop {workload.stop!r}, ready "
                f"{workload.ready!r} (within {workload.ready_timeout:g} s)",
                markup=False,
            )
    where = f" (on {loaded.benchmark.host})" if loaded.benchmark.host else ""
    console.print(f"benchmark{where}: {loaded.benchmark.command}", markup=False)
    console.print(goal_text(loaded.metrics), markup=False)
    tuning = loaded.tuning
    console.print(
        f"engine {tuning.engine}, budget {tuning.budget}, baseline x{tuning.baseline_repeats}, "
        f"confirm {tuning.confirm_candidates} candidates x {tuning.confirm_rounds} rounds, "
        f"apply {tuning.apply}"
    )
    for index, point in enumerate(tuning.start, 1):
        values = config_text(point)
        console.print(f"measured first ({index}): {values}", markup=False)


def knob_table(knobs: list[Knob]) -> Table:
    table = DataTable("knob", "type and range", "set by", "restart", "reference", "risk")
    for knob in knobs:
        table.add_row(
            knob.name,
            knob.domain.describe(),
            knob.actuator.describe() + (f" on {knob.group}" if knob.group else ""),
            "yes" if knob.restart else "",
            "" if knob.reference is None else str(knob.reference),
            _risk_text(knob),
        )
    return table


def _risk_text(knob: Knob) -> str:
    if knob.risk is None:
        return ""
    return "; ".join(
        f"{kind}: {values if isinstance(values, str) else ', '.join(values)}"
        for kind, values in knob.risk.to_dict().items()
    )


def goal_text(metrics: list[Metric]) -> str:
    parts = []
    for metric in metrics:
        text = f"{metric.direction} {metric.name}"
        if len(metrics) > 1:
            text += f" (weight {metric.weight:g})"
        if metric.limit:
            text += f" subject to {metric.name} {metric.limit}"
        parts.append(text)
    return "goal: " + ", ".join(parts)
