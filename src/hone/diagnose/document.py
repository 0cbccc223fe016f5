"""A diagnosis as one JSON document: what `GET /api/diagnoses/NAME` answers and what
`hone diagnose --json` prints, so scripts read the same shape from either."""

from __future__ import annotations

from typing import Any

from hone.diagnose.report import Diagnosis
from hone.diagnose.tables import function_table, module_table, summary


def document(d: Diagnosis, rows: int = 50) -> dict[str, Any]:
    """The verdict, capabilities, hot threads, off-CPU and lock summaries, top-down figures,
    suggested knobs, and the top `rows` functions and modules by total and self time; for
    `--system`, the CPU split and the process table with each process's drill-in command."""
    body = d.runtime()
    offcpu = body.pop("offcpu") or {}
    body["offcpu"] = {
        "totals_us": {kind: d.offcpu.total_us(kind) for kind in d.offcpu.stacks}
        if d.offcpu
        else {},
        "runqueue": offcpu.get("runqueue"),
    }
    body.update(
        samples=d.profile.total,
        event=d.profile.event,
        frequency_hz=d.profile.frequency_hz,
        summary=summary(d.profile),
        functions={
            "total": [_row(r) for r in function_table(d.profile, "total")[:rows]],
            "self": [_row(r) for r in function_table(d.profile, "self")[:rows]],
        },
        modules={
            "total": [_row(r) for r in module_table(d.profile, "total")[:rows]],
            "self": [_row(r) for r in module_table(d.profile, "self")[:rows]],
        },
    )
    if d.system:
        # what the saved file leaves to be computed: how many CPUs were busy, each process's
        # command to drill in, so a page or a script need not rebuild either
        body["system"]["busy_cpus"] = round(d.system.busy_cpus, 2)
        body["system"]["hone_cpu_pct"] = d.system.hone_pct  # hone's own cost, left out
        for row, process in zip(body["system"]["processes"], d.system.processes, strict=True):
            row["drill_in"] = process.drill_in
    return body


def _row(row: Any) -> dict[str, Any]:
    return {
        "name": row.name,
        "module": row.module,
        "self": row.self_share,
        "total": row.total_share,
        "self_samples": row.self_samples,
        "total_samples": row.total_samples,
    }
