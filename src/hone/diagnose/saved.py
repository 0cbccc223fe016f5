"""The diagnoses `hone diagnose` saved under hone's state directory, one folder each
(`diagnoses/20261123-021500-pid-1234/diagnosis.hone`): what `hone diagnoses` and the API's
`GET /api/diagnoses` list, newest first."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hone.errors import HoneError
from hone.output import DataTable, number
from hone.paths import state_dir

if TYPE_CHECKING:
    from hone.diagnose.report import Diagnosis

#: A diagnosis's name (its folder's): nothing that could lead out of the folder.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
FILE = "diagnosis.hone"
#: What the list says of each diagnosis; an unreadable one has these too, as null (one shape).
LISTED = ("target", "language", "created", "window_s", "samples", "finding")


def folder() -> Path:
    return state_dir() / "diagnoses"


def listed(load: Callable[[Path], Diagnosis] | None = None) -> list[dict[str, Any]]:
    """Every saved diagnosis, newest first: target, when, how long, samples, top finding; one
    that cannot be read is listed as `unreadable` rather than hiding the others."""
    if load is None:
        from hone.diagnose.report import Diagnosis

        load = Diagnosis.load
    where = folder()
    if not where.is_dir():
        return []
    items = []
    for path in sorted(where.glob(f"*/{FILE}"), reverse=True):
        name = path.parent.name
        if not NAME.fullmatch(name):
            continue
        try:
            d = load(path)
        except (HoneError, OSError):
            items.append({"name": name, **dict.fromkeys(LISTED), "error": "unreadable"})
            continue
        items.append(
            {
                "name": name,
                "target": d.target,
                "language": d.language,
                "created": d.created,
                "window_s": d.window_s,
                "samples": d.profile.total,
                "finding": d.findings[0].to_dict() if d.findings else None,
                "error": None,
            }
        )
    return items


def table(items: list[dict[str, Any]]) -> DataTable:
    """The list for people (`hone diagnoses`, `hone remote diagnoses`): the verdict whole."""
    rows = DataTable("diagnosis", "target", "created", "window", "samples", "verdict")
    for item in items:
        finding, created = item["finding"], item["created"]
        rows.add_row(
            item["name"],
            item["target"] or "",
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(created)) if created else "",
            f"{number(item['window_s'])} s" if item["window_s"] is not None else "",
            str(item["samples"] if item["samples"] is not None else ""),
            item["error"] or (finding["headline"] if finding else ""),
        )
    return rows
