"""`hone report STUDY`: one self-contained HTML file (no scripts, no network) with the
best-so-far curve against the baseline band, every trial's value, the parameters, the knobs'
importance and effects."""

from __future__ import annotations

import statistics
from html import escape
from pathlib import Path

from hone.outfile import write_atomic
from hone.output import config_text, measured, number
from hone.paths import state_dir
from hone.report.svg import Series, chart
from hone.storage import StudyStore, TrialRecord
from hone.tune.confirm import noise_text
from hone.tune.risk import gain_text, risk_lines
from hone.tune.views import viewed_insight

STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1100px;padding:0 1rem}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem}
table{border-collapse:collapse;font-size:13px;display:block;max-width:100%;overflow-x:auto}
td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}
th{background:#f1f1f1}td.l,th.l{text-align:left}td.p{white-space:nowrap}.fail{background:#fdeaea}
.chart{width:100%;max-width:760px;height:auto}.chart text{font-size:11px;fill:#333}
.chart .title{font-size:13px;font-weight:600}.grid{stroke:#e4e4e4}.band{fill:#9ecae1;opacity:.35}
.summary td{text-align:left}
"""


#: How every report hone writes begins (is_report).
_HEAD = '<!doctype html><html lang="en"><meta charset="utf-8">\n<title>hone report: '


def is_report(path: Path) -> bool:
    """Whether the file is a report hone wrote (one `hone report` may replace)."""
    try:
        with path.open("rb") as handle:
            return handle.read(len(_HEAD.encode())) == _HEAD.encode()
    except OSError:
        return False


def write_report(name: str, output: Path | None, storage: str | None) -> Path:
    """The report written to `output`, or to hone's own reports folder."""
    store = StudyStore(storage)
    study = store.find(name)
    path = output or state_dir() / "reports" / f"{study.name.replace('#', '-')}.html"
    if output is None:  # hone's own folder; the user's must exist (outfile.require_folder)
        path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, _html(store, study).encode())
    return path


def report_html(name: str, storage: str | None) -> str:
    """The report as text (`hone report NAME -o -`)."""
    store = StudyStore(storage)
    return _html(store, store.find(name))


def _html(store: StudyStore, study) -> str:  # type: ignore[no-untyped-def]
    trials = store.trials(study)
    attrs = study.attrs
    result = attrs.get("result") or {}

    curve = _progress(attrs, trials)

    knob_names = sorted({k for t in trials for k in t.config})
    metric_names = sorted({k for t in trials for k in t.metrics})
    rows = []
    for t in trials:
        css = ' class="fail"' if t.state == "fail" else ""
        cells = "".join(f"<td>{escape(str(t.config.get(k, '')))}</td>" for k in knob_names)
        cells += "".join(
            f"<td>{number(t.metrics[m])}</td>" if m in t.metrics else "<td></td>"
            for m in metric_names
        )
        score = "" if t.score is None else number(t.score)
        phase = t.phase + (f" r{t.round + 1}" if t.round is not None else "")
        rows.append(
            f"<tr{css}><td>{t.number}</td><td class='l p'>{phase}</td>{cells}<td>{score}</td>"
            f"<td class=l>{escape(t.error or t.state)}</td></tr>"
        )
    head = "".join(f"<th>{escape(k)}</th>" for k in [*knob_names, *metric_names])
    insight = viewed_insight(store, study, trials)
    importance_rows = "".join(
        f"<tr><td class=l>{escape(r['knob'])}</td><td>{r['share']:.1%}</td></tr>" for r in insight
    )
    gain = result.get("gain")
    units = {m["name"]: m.get("unit", "") for m in attrs.get("metrics", [])}
    baseline = measured(attrs.get("baseline_metrics") or {}, units)
    if baseline and "baseline_cv" in attrs:
        runs = (attrs.get("quality") or {}).get("runs", 2)
        baseline += f" ({noise_text(attrs['baseline_cv'], runs)})"
    summary = [
        ("state", study.state),
        ("engine", attrs.get("engine", "")),
        ("baseline", baseline),
        ("best", config_text(result.get("best") or {})),
        ("best metrics", measured(result.get("best_metrics") or {}, units)),
        *(
            [("baseline in the same rounds", measured(result["confirm_baseline_metrics"], units))]
            if result.get("confirm_baseline_metrics")
            else []
        ),
        (
            "gain in confirmation",
            gain_text(gain) if gain else "",
        ),
        *(("risk", line) for line in risk_lines(result.get("risk"))),
        ("outcome", f"{result.get('outcome', '')}: {result.get('reason', '')}"),
    ]
    summary_rows = "".join(
        f"<tr><th class=l>{k}</th><td>{escape(str(v))}</td></tr>" for k, v in summary
    )
    html = (
        _HEAD
        + f"""{escape(study.name)}</title><style>{STYLE}</style>
<h1>hone tuning report: {escape(study.name)}</h1>
<table class="summary">{summary_rows}</table>
{_why_section(attrs.get("why"))}
<h2>Progress</h2>{curve}
<h2>Knob importance</h2><table><tr><th class=l>knob</th><th>share</th></tr>{importance_rows}</table>
{_effects_section(insight)}
<h2>Trials</h2><table>
<tr><th>#</th><th class=l>phase</th>{head}<th>score</th><th class=l>state</th></tr>
{"".join(rows)}</table></html>
"""
    )
    return html


def _progress(attrs: dict, trials: list[TrialRecord]) -> str:
    """Each search trial and the best so far against the baseline band: in the metric's own
    figures and direction for a one-metric study (a time as 0.12 s, lower is better, not a
    score of -0.12), else the combined score."""
    metric = _plotted_metric(attrs)
    sign = -1.0 if metric and metric["direction"] == "minimize" else 1.0

    def value(t: TrialRecord) -> float | None:
        return None if t.score is None else sign * t.score

    search = [t for t in trials if t.phase == "search"]
    points = [(i + 1, y) for i, t in enumerate(search) if (y := value(t)) is not None]
    best_points: list[tuple[float, float]] = []
    for x, y in points:
        best = y if not best_points else (min if sign < 0 else max)(y, best_points[-1][1])
        best_points.append((x, best))
    name = metric["name"] if metric else "score"
    unit = f" ({metric['unit']})" if metric and metric.get("unit") else ""
    unit = unit if metric else " (weighted gain over the baseline, %)"
    better = "lower" if sign < 0 else "higher"
    return chart(
        [
            Series("trial", points, "#1f77b4", line=False),
            Series("best so far", best_points, "#d62728"),
        ],
        title=f"{name} per trial and best so far ({better} is better)",
        x_label="search trial",
        y_label=name + unit,
        band=baseline_band([value(t) for t in trials if t.phase == "baseline"]),
    )


def _plotted_metric(attrs: dict) -> dict | None:
    """The one metric a study's scores are the raw values of, else None (weighted metrics,
    or a worker's gains over its own baseline)."""
    scored = [m for m in attrs.get("metrics", []) if m.get("weight", 1) > 0]
    if len(scored) != 1 or attrs.get("scores") == "relative":
        return None
    return scored[0]


def _effects_section(insight: list[dict]) -> str:
    """Each leading knob's effect curve as a row of values over a row of predicted scores."""
    tables = []
    for row in insight:
        if not row["effect"]:
            continue
        values = "".join(f"<th>{escape(str(p['value']))}</th>" for p in row["effect"])
        scores = "".join(f"<td>{number(p['score'])}</td>" for p in row["effect"])
        tables.append(
            f"<table class=effect><tr><th class=l>{escape(row['knob'])}</th>{values}</tr>"
            f"<tr><th class=l>predicted score</th>{scores}</tr></table>"
        )
    if not tables:
        return ""
    return (
        "<h2>Effect of the knobs that matter</h2><p>The score the trials' model predicts at "
        "each value, the other knobs as measured (partial dependence).</p>" + "".join(tables)
    )


def _why_section(why: dict | None) -> str:
    """The paragraph and the table of what moved between the baseline's and the winner's
    time profiles (hone.tune.why), or the line saying why there is none."""
    if not why:
        return ""
    if why.get("missing"):
        return f"<h2>Why it won</h2><p>no profile: {escape(why['missing'])}</p>"
    rows = "".join(
        f"<tr><td class=l>{escape(c['name'])}</td><td>{100 * c['before']:.1f}</td>"
        f"<td>{100 * c['after']:.1f}</td><td>{100 * c['delta']:+.1f}</td></tr>"
        for c in why["changes"]
    )
    seconds = why["seconds"]
    return (
        f"<h2>Why it won</h2><p>{escape(why['text'])}</p>"
        f"<p>Share of {escape(why['process'])}'s time (on a CPU and off it), one reading each "
        f"under perf: baseline {seconds['baseline']:g} s, winner {seconds['winner']:g} s.</p>"
        "<table><tr><th class=l>function or wait state, with what it calls</th><th>baseline %</th>"
        f"<th>winner %</th><th>change (points)</th></tr>{rows}</table>"
    )


def baseline_band(scores: list[float | None]) -> tuple[float, float] | None:
    """The baseline runs' mean ± 2 standard deviations: the noise a trial must beat (the
    band the web UI draws too)."""
    done = [s for s in scores if s is not None]
    if not done:
        return None
    mean = statistics.fmean(done)
    spread = 2 * statistics.stdev(done) if len(done) > 1 else 0.0
    return mean - spread, mean + spread
