"""Terminal views of studies: `hone studies`, `hone show`."""

from __future__ import annotations

import contextlib
import hashlib
import json

import optuna
import sqlalchemy
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from hone.output import (
    DataTable,
    config_text,
    measured,
    number,
    percent_gain,
    same_rounds,
    state_text,
)
from hone.space import SearchSpace
from hone.storage import StudyStore
from hone.storage.store import RUNNING, StudyRecord, TrialRecord
from hone.storage.summary import process_alive, running_workers, summaries, workers_of
from hone.tune.confirm import noise_text, quality_text
from hone.tune.risk import gain_text, risk_lines

EFFECT_KNOBS = 3  # knobs whose effect curve is shown, most important first
INSIGHT_TRIALS = 2000  # trials importance and effects are fitted on at most (docs/benchmarks.md)


def studies_table(store: StudyStore) -> Table:
    table = DataTable("study", "state", "engine", "trials", "outcome", "gain", "workers", "created")
    for row in summaries(store):
        gain = percent_gain(row["gain"], row["gain_low"], row["gain_high"])
        table.add_row(
            row["name"],
            state_text(row["state"], row["alive"]),
            str(row["engine"] or ""),
            str(row["trials"]),
            str(row["outcome"] or ""),
            gain,
            workers_text(row["workers"]),
            str(row["created"] or ""),
        )
    return table


def workers_text(workers: list[dict]) -> str:
    """`a: #12, b: idle, c: lost, d: #9 (silent)` — each worker of a shared study and what
    it runs now."""
    parts = []
    for worker in workers:
        if worker["running"] is not None:
            doing = f"#{worker['running']}"
            if worker["state"] == "silent":  # no heartbeat within its lease
                doing += " (silent)"
        elif worker["state"] == "running":
            doing = "idle"
        else:
            doing = str(worker["state"])
        parts.append(f"{worker['id']}: {doing}")
    return ", ".join(parts)


def selection_text(selection: dict) -> str:
    """`knobs kept: a, b; held: c=3, d=on` — the study's selection (`tuning: {select: ...}`)."""
    held = config_text(selection.get("held", {}))
    return f"knobs kept: {', '.join(selection.get('knobs', []))}; held: {held or 'none'}"


def show_study(console: Console, name: str, storage: str | None) -> None:
    from hone.tune.why import lines as why_lines  # perf's parsers: only `hone show` prints it

    store = StudyStore(storage)
    study = store.find(name)
    trials = store.trials(study)
    attrs = study.attrs
    units = {m["name"]: m.get("unit", "") for m in attrs.get("metrics", [])}
    console.print(
        f"study [bold]{escape(study.name)}[/]: "
        f"{escape(state_text(study.state, process_alive(attrs)))}, "
        f"engine {escape(str(attrs.get('engine')))}",
        markup=True,
    )
    if attrs.get("error") and study.state != "running":  # why it stopped, as the web UI says
        console.print(f"stopped: {attrs['error']}", markup=False)
    for worker in workers_of(attrs, running_workers(store, study.study_id)):
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
        runs = (attrs.get("quality") or {}).get("runs", 2)
        console.print(f"baseline: {values} ({noise_text(attrs.get('baseline_cv', 0), runs)})")
    if attrs.get("quality"):
        console.print(quality_text(attrs["quality"]), markup=False)
    if attrs.get("selection"):
        console.print(selection_text(attrs["selection"]), markup=False)
    result = attrs.get("result") or {}
    if result.get("best"):
        console.print("best: " + config_text(result["best"]), markup=False)
        metrics = result.get("best_metrics")
        if metrics:  # a shared study's decision has gains only, each worker's own
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
        console.print(f"[red]{len(failures)} failed trial(s)[/]:", markup=True)
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
