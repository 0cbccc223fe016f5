"""Terminal views of projects and studies: `hone check`, `hone studies`, `hone show`."""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

import optuna
import sqlalchemy
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from hone.errors import HoneError
from hone.output import DataTable, measured, number, percent_gain, print_json, same_rounds
from hone.space import SearchSpace
from hone.storage import StudyStore
from hone.storage.store import RUNNING, StudyRecord, TrialRecord
from hone.storage.summary import summaries, workers_of
from hone.tune.confirm import quality_text
from hone.tune.risk import gain_text, risk_lines

if TYPE_CHECKING:
    from hone.project.model import Knob, Metric

EFFECT_KNOBS = 3  # knobs whose effect curve is shown, most important first
INSIGHT_TRIALS = 2000  # trials importance and effects are fitted on at most (docs/benchmarks.md)


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
            console.print(f"A-Tune server file of project [bold]{escape(name)}[/]")
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
            console.print(f"A-Tune client file of project [bold]{escape(name)}[/]")
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
    console.print(f"project [bold]{escape(loaded.name)}[/] ({sources})")
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
        values = ", ".join(f"{name}={value}" for name, value in point.items())
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


def studies_table(storage: str | None) -> Table:
    table = DataTable("study", "state", "engine", "trials", "outcome", "gain", "workers", "created")
    for row in summaries(StudyStore(storage)):
        gain, half = row["gain"], row["gain_half_width"]
        table.add_row(
            row["name"],
            row["state"],
            str(row["engine"] or ""),
            str(row["trials"]),
            str(row["outcome"] or ""),
            percent_gain(gain, half),
            workers_text(row["workers"]),
            str(row["created"] or ""),
        )
    return table


def workers_text(workers: list[dict]) -> str:
    """`a: #12, b: idle, c: lost` — each worker of a shared study and what it runs now."""
    parts = []
    for worker in workers:
        if worker["running"] is not None:
            doing = f"#{worker['running']}"
        elif worker["state"] == "running":
            doing = "idle"
        else:
            doing = str(worker["state"])
        parts.append(f"{worker['id']}: {doing}")
    return ", ".join(parts)


def show_study(console: Console, name: str, storage: str | None) -> None:
    from hone.tune.why import lines as why_lines  # perf's parsers: only `hone show` prints it

    store = StudyStore(storage)
    study = store.find(name)
    trials = store.trials(study)
    attrs = study.attrs
    units = {m["name"]: m.get("unit", "") for m in attrs.get("metrics", [])}
    console.print(
        f"study [bold]{escape(study.name)}[/]: {study.state}, engine {attrs.get('engine')}"
    )
    for worker in workers_of(attrs, {}):
        base = measured(worker["baseline_metrics"] or {}, units)
        console.print(
            f"worker {worker['id']} on {worker['host']}: {worker['state']}, baseline {base} "
            f"(noise CV {worker['baseline_cv'] or 0:.1f} %)"
            + (f"; {worker['error']}" if worker["error"] else ""),
            markup=False,
        )
    baseline = attrs.get("baseline_metrics")
    if baseline:
        values = measured(baseline, units)
        console.print(f"baseline: {values} (noise CV {attrs.get('baseline_cv', 0):.1f} %)")
    if attrs.get("quality"):
        console.print(quality_text(attrs["quality"]), markup=False)
    result = attrs.get("result") or {}
    if result.get("best"):
        console.print(
            "best: " + ", ".join(f"{k}={v}" for k, v in result["best"].items()), markup=False
        )
        metrics = result.get("best_metrics") or {}
        console.print("      " + measured(metrics, units))
        if result.get("confirm_baseline_metrics"):
            console.print(same_rounds(result["confirm_baseline_metrics"], units), markup=False)
    if result.get("gain"):
        gain = result["gain"]
        console.print(f"gain in confirmation: {gain_text(gain)}")
    if result.get("disturbed"):
        console.print(
            f"{result['disturbed']} reading(s) taken while the machine was disturbed, "
            "each measured again (phase disturbed below)"
        )
    if result.get("warmup"):
        console.print(
            f"{result['warmup']} first reading(s) after a restart left out as a warm-up "
            "transient, each measured again (phase warmup below)"
        )
    if result.get("restarts"):
        stages = result["restarts"]
        console.print(
            f"workload restarts: {sum(stages.values())} ("
            + ", ".join(f"{stage} {count}" for stage, count in stages.items())
            + ")"
        )
    for line in risk_lines(result.get("risk")):
        console.print(line, markup=False)
    for line in why_lines(attrs.get("why")):
        console.print(line, markup=False)
    if result.get("outcome"):
        console.print(f"{result['outcome']}: {result.get('reason', '')}", markup=False)
    console.print(trial_table(trials))
    failures = [t for t in trials if t.state == "fail"]
    if failures:
        console.print(f"[red]{len(failures)} failed trial(s)[/]:")
        for trial in failures:
            console.print(f"  #{trial.number} ({trial.phase}): {trial.error}", markup=False)
    insight = viewed_insight(store, study, trials)
    if insight:
        table = DataTable("knob", "importance")
        for row in insight:
            table.add_row(row["knob"], f"{row['share']:.1%}")
        console.print(table)
    curves = [row for row in insight if row["effect"]]
    if curves:  # how the score moves along each knob that matters most
        table = DataTable(
            "knob", "value", "predicted score", title="effect of the knobs that matter"
        )
        for row in curves:
            for point in row["effect"]:
                table.add_row(row["knob"], str(point["value"]), number(point["score"]))
        console.print(table)


def trial_table(trials: list[TrialRecord]) -> Table:
    names = sorted({k for t in trials for k in t.config})
    metric_names = sorted({k for t in trials for k in t.metrics})
    shared = any(t.worker for t in trials)  # a study of `hone worker`s: who ran each trial
    fixed = ["#", "phase", "worker", "score", "state"]
    table = DataTable(
        "#",
        "phase",
        *(["worker"] if shared else []),
        *_labels(names, "knob", fixed + metric_names),
        *_labels(metric_names, "metric", fixed + names),
    )
    table.add_column("score")
    table.add_column("state")
    for trial in trials:
        table.add_row(
            str(trial.number),
            trial.phase + (f" r{trial.round + 1}" if trial.round is not None else ""),
            *([trial.worker or ""] if shared else []),
            *(str(trial.config.get(n, "")) for n in names),
            *(number(trial.metrics[m]) if m in trial.metrics else "" for m in metric_names),
            "" if trial.score is None else number(trial.score),
            trial.state,
        )
    return table


def _labels(names: list[str], kind: str, taken: list[str]) -> list[str]:
    """Column headers: a knob or metric named like another column (a metric called `score`
    beside the objective's score) says which it is."""
    return [f"{name} ({kind})" if name in taken else name for name in names]


def knob_insight(attrs: dict, trials: list[TrialRecord]) -> list[dict]:
    """Knobs most important first, each with its share and, for the first EFFECT_KNOBS, its
    effect curve: what `hone show`, the report and the web UI show. Kept with the study when it
    ends (`keep_insight`) and read back while no trial has changed since: the fit needs
    scikit-learn, whose import alone takes a second."""
    return _insight(attrs, trials)[0]


def viewed_insight(store: StudyStore, study: StudyRecord, trials: list[TrialRecord]) -> list[dict]:
    """`knob_insight` for `hone show` and the report; one fitted for a study that no longer
    runs is kept with it, so the next view reads it instead of importing scikit-learn again.
    Keeping it is a cache: a database that refuses the write still gets its view."""
    rows, fitted = _insight(study.attrs, trials)
    if fitted is not None and study.state != RUNNING:
        with contextlib.suppress(optuna.exceptions.OptunaError, sqlalchemy.exc.SQLAlchemyError):
            store.update(study, insight={"of": fitted, "knobs": rows})
    return rows


def _insight(attrs: dict, trials: list[TrialRecord]) -> tuple[list[dict], str | None]:
    """The insight, and the fingerprint of its trials when it was fitted now (None: read back
    or nothing to fit)."""
    scored = _scored(attrs, trials)
    if scored is None:
        return [], None
    space, done = scored
    fingerprint = _fingerprint(done)
    kept = attrs.get("insight") or {}
    if kept.get("of") == fingerprint:
        return kept["knobs"], None
    return _fit_insight(space, done), fingerprint


def keep_insight(store: StudyStore, study: StudyRecord) -> list[dict]:
    """Fit the insight on the study's trials now and keep it with the study."""
    scored = _scored(study.attrs, store.trials(study))
    if scored is None:
        return []
    space, done = scored
    rows = _fit_insight(space, done)
    store.update(study, insight={"of": _fingerprint(done), "knobs": rows})
    return rows


def _fit_insight(space: SearchSpace, done: list[TrialRecord]) -> list[dict]:
    """One fit of the trees serves shares and curves, on at most INSIGHT_TRIALS trials spread
    evenly over the study (10,000 trials took minutes; the web UI asks again as a live study
    grows)."""
    from hone.importance import fit, shares_of
    from hone.importance.effects import effect_curves
    from hone.optimizers.base import Observation

    if len(done) > INSIGHT_TRIALS:
        step = len(done) / INSIGHT_TRIALS
        done = [done[int(i * step)] for i in range(INSIGHT_TRIALS)]
    fitted = fit(space, [Observation(t.config, -t.score) for t in done])  # type: ignore[operator]
    if fitted is None:
        return []
    shares = sorted(shares_of(space, fitted).items(), key=lambda kv: -kv[1])
    top = [k for k, _ in shares[:EFFECT_KNOBS]]
    curves = effect_curves(space, [], [], top, fitted=fitted)
    return [
        {
            "knob": knob,
            "share": share,
            "effect": [{"value": v, "score": y} for v, y in curves.get(knob, [])],
        }
        for knob, share in shares
    ]


def _fingerprint(done: list[TrialRecord]) -> str:
    """Which scored trials an insight was fitted on."""
    text = json.dumps([[t.number, t.score] for t in done])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _scored(attrs: dict, trials: list[TrialRecord]) -> tuple[SearchSpace, list[TrialRecord]] | None:
    """The study's space and its finished, feasible trials with a score."""
    from hone.space.serialize import domain_from_dict

    domains = {n: domain_from_dict(d) for n, d in attrs.get("space", {}).items()}
    if not domains:
        return None
    space = SearchSpace(domains)
    done = [
        t
        for t in trials
        if t.state == "complete"
        and t.score is not None
        and set(domains) <= set(t.config)
        and space.feasible(t.config)
    ]
    return space, done
