"""Diagnosis API: the diagnoses `hone diagnose` saved under hone's state directory, their
verdicts and tables, flame graph trees (on-CPU, off-CPU, differential) and the HTML reports.

A diagnosis is named by its folder (`diagnoses/20261123-021500-pid-1234`); names are checked
against a strict pattern and resolved inside that directory, so no request reaches another file.
Flame graphs are drawn on the server by hone's own renderer (`hone.diagnose.flamegraph`), the
same SVG that `hone diagnose` writes, so the page and the report show one picture."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Query
from fastapi.responses import HTMLResponse, Response

from hone.diagnose.diff import diff, diff_summary, moves
from hone.diagnose.document import document
from hone.diagnose.flamegraph import diff_flamegraph_svg, flamegraph_svg
from hone.diagnose.page import to_html
from hone.diagnose.profile import Profile
from hone.diagnose.report import Diagnosis
from hone.diagnose.saved import FILE, NAME, folder, listed
from hone.errors import HoneError

router = APIRouter(prefix="/api/diagnoses", tags=["diagnoses"])

#: The saved HTML report runs its own inline script; it gets a sandbox (an opaque origin that
#: cannot read this app's storage or call its API with the token) and nothing from elsewhere.
REPORT_POLICY = (
    "sandbox allow-scripts; default-src 'none'; script-src 'unsafe-inline'; "
    "style-src 'unsafe-inline'; img-src data:"
)


def _path(name: str) -> Path:
    if not NAME.fullmatch(name):
        raise HTTPException(404, f"no diagnosis {name!r}")
    path = folder() / name / FILE
    if not path.is_file():
        raise HTTPException(404, f"no diagnosis {name!r}")
    return path


@lru_cache(maxsize=16)
def _load(path: Path, mtime: float) -> Diagnosis:
    """Loaded once per file version: a profile of many stacks takes a moment to read."""
    del mtime  # part of the cache key only
    return Diagnosis.load(path)


def load(name: str) -> Diagnosis:
    path = _path(name)
    try:
        return _load(path, path.stat().st_mtime)
    except HoneError as error:
        raise HTTPException(422, str(error)) from None


@router.get("")
def list_diagnoses() -> list[dict[str, Any]]:
    """Every saved diagnosis, newest first: target, when, how long, samples, top finding."""
    return listed(lambda path: _load(path, path.stat().st_mtime))


@router.get("/{name}")
def diagnosis(name: str, rows: int = Query(50, ge=1, le=1000)) -> dict[str, Any]:
    """One diagnosis: the verdict, capabilities, hot threads, off-CPU and lock summaries, the
    top-down figures, suggested knobs, and top-down / bottom-up tables by function and module."""
    return {**document(load(name), rows), "name": name}


Views = Literal["cpu", "offcpu"]


def _profile(d: Diagnosis, view: str) -> tuple[Profile, str]:
    """The profile a flame graph of `view` draws, and its unit."""
    if view == "cpu":
        return d.profile, "samples"
    if d.offcpu is None:
        raise HTTPException(404, "this diagnosis has no off-CPU data")
    return Profile.from_folded(d.offcpu.folded(), target=d.target), "µs"


@router.get("/{name}/flame")
def flame(name: str, view: Views = "cpu") -> dict[str, Any]:
    """Flame graph data: folded stacks (`thread;outer;...;leaf` -> samples, or off-CPU µs)."""
    profile, unit = _profile(load(name), view)
    return {"name": name, "view": view, "unit": unit, "folded": profile.folded()}


@router.get("/{name}/flame.svg", response_class=Response)
def flame_svg(
    name: str,
    view: Views = "cpu",
    base: str | None = Query(None, description="another diagnosis: a differential graph"),
    width: int = Query(1200, ge=300, le=8000),
) -> Response:
    """The interactive flame graph drawn by hone; with `base`, the differential one (widths of
    this diagnosis, red where a frame's share grew since `base`, blue where it shrank)."""
    d = load(name)
    profile, unit = _profile(d, view)
    what = "on-CPU" if view == "cpu" else "off-CPU"
    if base is None:
        text = flamegraph_svg(profile, title=f"{what}: {d.target}", unit=unit, width=width)
    else:
        before, _ = _profile(load(base), view)
        text = diff_flamegraph_svg(
            before, profile, title=f"{what}: {base} → {name}", unit=unit, width=width
        )
    return Response(
        text, media_type="image/svg+xml", headers={"Content-Security-Policy": REPORT_POLICY}
    )


@router.get("/{name}/compare")
def compare(
    name: str,
    base: str = Query(..., description="the earlier diagnosis"),
    measure: Literal["self", "total"] = "self",
    rows: int = Query(25, ge=1, le=1000),
) -> dict[str, Any]:
    """Which functions and modules gained or lost share of the on-CPU samples since `base`,
    and the one-line summary of the moves."""
    now, was = load(name).profile, load(base).profile
    return {
        "name": name,
        "base": base,
        "summary": diff_summary(was, now),
        "functions": moves(diff(was, now, "function", measure), rows),
        "modules": moves(diff(was, now, "module", measure), rows),
    }


@router.get("/{name}/report", response_class=HTMLResponse)
def report(name: str) -> HTMLResponse:
    """The self-contained HTML report, as `hone diagnose` writes it."""
    d = load(name)
    saved = _path(name).parent / "report.html"
    text = saved.read_text() if saved.is_file() else to_html(d)
    return HTMLResponse(text, headers={"Content-Security-Policy": REPORT_POLICY})
