"""What the API says about studies: summaries for the list in two SQL queries whatever the number
of studies, and full views of one study (trials, best, baseline band, gains)."""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from dataclasses import asdict
from typing import Any

import numpy as np
import sqlalchemy as sa
from optuna.storages._rdb import models

from hone.storage import StudyRecord, StudyStore
from hone.storage.store import RUNNING, TrialRecord

#: Study attributes the API passes on as they are.
PUBLIC_ATTRS = (
    "project",
    "state",
    "engine",
    "budget",
    "created",
    "error",
    "metrics",
    "knobs",
    "space",
    "baseline_metrics",
    "baseline_score",
    "baseline_cv",
    "result",
)


def single_metric(attrs: dict[str, Any]) -> bool:
    """True when the score is one metric's raw value (gains are then relative, in %)."""
    scored = [m for m in attrs.get("metrics", []) if m.get("weight", 1) > 0]
    return len(scored) == 1


def gain_of(attrs: dict[str, Any], score: float | None) -> float | None:
    """The same gain the tuner reports: % of the baseline for one metric, else the difference
    of scores that are already weighted percentages."""
    base = attrs.get("baseline_score")
    if score is None or base is None:
        return None
    if not single_metric(attrs):
        return float(score - base)
    return float((score - base) / abs(base) * 100.0) if base else None


def summaries(store: StudyStore) -> list[dict[str, Any]]:
    """One row per study: state, trials, failures, best search score, gains."""
    engine = store.storage.engine
    attrs: dict[int, dict[str, Any]] = defaultdict(dict)
    names: dict[int, str] = {}
    counts: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    best: dict[int, float] = {}
    s, ua = models.StudyModel.__table__, models.StudyUserAttributeModel.__table__
    t, v = models.TrialModel.__table__, models.TrialValueModel.__table__
    ta = models.TrialUserAttributeModel.__table__
    phase = ta.alias("phase")
    with engine.connect() as conn:
        for study_id, name in conn.execute(sa.select(s.c.study_id, s.c.study_name)):
            names[study_id] = name
        for study_id, key, value in conn.execute(
            sa.select(ua.c.study_id, ua.c.key, ua.c.value_json).where(
                ua.c.key.in_([*PUBLIC_ATTRS, "pid"])
            )
        ):
            attrs[study_id][key] = json.loads(value)
        query = (
            sa.select(
                t.c.study_id, t.c.state, phase.c.value_json, sa.func.count(), sa.func.max(v.c.value)
            )
            .select_from(t)
            .outerjoin(v, v.c.trial_id == t.c.trial_id)
            .outerjoin(phase, sa.and_(phase.c.trial_id == t.c.trial_id, phase.c.key == "phase"))
            .group_by(t.c.study_id, t.c.state, phase.c.value_json)
        )
        for study_id, state, phase_json, count, top in conn.execute(query):
            state_name = getattr(state, "name", str(state)).lower()
            counts[study_id][state_name] += count
            in_search = phase_json is None or json.loads(phase_json) == "search"
            if in_search and state_name == "complete" and top is not None:
                best[study_id] = max(top, best.get(study_id, -math.inf))
    return [
        summary_row(name, study_id, attrs[study_id], counts[study_id], best.get(study_id))
        for study_id, name in sorted(names.items())
    ]


def summary_row(
    name: str,
    study_id: int,
    attrs: dict[str, Any],
    counts: dict[str, int],
    best_score: float | None,
) -> dict[str, Any]:
    result = attrs.get("result") or {}
    confirmed = result.get("gain") or {}
    return {
        "name": name,
        "id": study_id,
        "project": attrs.get("project", name),
        "state": attrs.get("state", RUNNING),
        "alive": _alive(attrs) if attrs.get("state", RUNNING) == RUNNING else None,
        "engine": attrs.get("engine"),
        "budget": attrs.get("budget"),
        "created": attrs.get("created"),
        "trials": sum(counts.values()),
        "failures": counts.get("fail", 0),
        "outcome": result.get("outcome"),
        "best_score": best_score,
        "best_gain": gain_of(attrs, best_score),
        "gain": confirmed.get("mean"),
        "gain_half_width": _finite(confirmed.get("half_width")),
        "baseline_score": attrs.get("baseline_score"),
    }


def _alive(attrs: dict[str, Any]) -> bool | None:
    """Whether the process that runs the study still exists on this machine."""
    pid = attrs.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _finite(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def trial_dict(trial: TrialRecord) -> dict[str, Any]:
    data = asdict(trial)
    data["metrics"] = {k: _finite(x) for k, x in trial.metrics.items()}
    data["score"] = _finite(trial.score)
    return data


def detail(store: StudyStore, study: StudyRecord, trials: list[TrialRecord]) -> dict[str, Any]:
    """A study's attributes, summary and baseline band (mean ± 2 standard deviations of the
    baseline runs: the noise a trial must beat)."""
    attrs = study.attrs
    counts: dict[str, int] = defaultdict(int)
    for trial in trials:
        counts[trial.state] += 1
    scores = [t.score for t in trials if t.phase == "search" and t.score is not None]
    row = summary_row(study.name, study.study_id, attrs, counts, max(scores, default=None))
    base = [t.score for t in trials if t.phase == "baseline" and t.score is not None]
    band = None
    if base:
        mean = float(np.mean(base))
        spread = 2 * float(np.std(base, ddof=1)) if len(base) > 1 else 0.0
        band = {"mean": mean, "low": mean - spread, "high": mean + spread, "runs": len(base)}
    return {
        **row,
        "attrs": {k: attrs[k] for k in PUBLIC_ATTRS if k in attrs},
        "single_metric": single_metric(attrs),
        "band": band,
    }


def best_of(study: StudyRecord, trials: list[TrialRecord]) -> dict[str, Any]:
    """The confirmed best when the study finished, else the best search trial so far."""
    result = study.attrs.get("result") or {}
    if result.get("best"):
        return {
            "source": "confirmed",
            "config": result["best"],
            "metrics": result.get("best_metrics") or {},
            "gain": (result.get("gain") or {}).get("mean"),
            "outcome": result.get("outcome"),
            "reason": result.get("reason"),
        }
    done = [t for t in trials if t.phase == "search" and t.score is not None]
    if not done:
        return {"source": "none", "config": None, "metrics": {}, "gain": None}
    top = max(done, key=lambda t: t.score or -math.inf)
    return {
        "source": "search",
        "trial": top.number,
        "config": top.config,
        "metrics": trial_dict(top)["metrics"],
        "gain": gain_of(study.attrs, top.score),
    }
