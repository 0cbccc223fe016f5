"""The diagnoses `hone diagnose` saved under hone's state directory, one folder each
(`diagnoses/20261123-021500-pid-1234/diagnosis.hone`): what `hone diagnoses` and the API's
`GET /api/diagnoses` list, newest first. A folder whose diagnosis.hone is missing (its hone was
killed as it recorded, or could not save) is listed as incomplete, with why and what it holds,
so that it can be found and deleted."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hone.diagnose.scratch import OWNER, boot, ended, read_owner
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
    that cannot be read is listed as `unreadable`, and a folder a diagnosis left without its
    diagnosis.hone as `incomplete` (`incomplete()`), rather than hiding them."""
    if load is None:
        from hone.diagnose.report import Diagnosis

        load = Diagnosis.load
    where = folder()
    if not where.is_dir():
        return []
    items = []
    for path in sorted(where.iterdir(), reverse=True):
        name = path.name
        if not NAME.fullmatch(name) or path.is_symlink() or not path.is_dir():
            continue
        if not (path / FILE).is_file():
            left = incomplete(path)
            if left is not None:
                items.append(left)
            continue
        try:
            d = load(path / FILE)
        except (HoneError, OSError):
            items.append({"name": name, **dict.fromkeys(LISTED), "error": "unreadable",
                          "incomplete": None})  # fmt: skip
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
                "incomplete": None,
            }
        )
    return items


def incomplete(path: Path) -> dict[str, Any] | None:
    """A diagnosis's folder without its diagnosis.hone: one being recorded, or one whose hone
    was killed (SIGKILL, the OOM killer) or failed to save, with the files it holds (perf.data
    and the like, to delete or to read with `perf report`). None for a comparison's folder (a
    report.html and no OWNER file): it is no diagnosis."""
    owned = read_owner(path)
    try:
        files = {f.name: f.stat().st_size for f in sorted(path.iterdir())
                 if f.is_file() and f.name != OWNER and not f.name.startswith(".")}  # fmt: skip
        created = path.stat().st_mtime
    except OSError:  # removed meanwhile
        return None
    if owned is None and "report.html" in files:
        return None
    if owned is None:
        reason, running = f"no {FILE}, and no record of the hone that made it", False
    elif owned.get("error"):
        reason, running = f"saving failed: {owned['error']}", False
    elif not ended(owned):
        reason, running = f"being recorded by hone (pid {owned['pid']})", True
    elif owned.get("boot") != boot():
        reason, running = "the machine restarted while it was recorded", False
    else:
        reason = f"hone (pid {owned.get('pid')}) ended before it saved the diagnosis (killed)"
        running = False
    target = owned.get("target") if owned else None
    when = owned.get("created") if owned else None
    held = ", ".join(f"{name} ({_size(size)})" for name, size in files.items()) or "no files"
    return {
        "name": path.name,
        **dict.fromkeys(LISTED),
        "target": target if isinstance(target, str) else None,
        "created": when if isinstance(when, int | float) else created,
        "error": f"incomplete: {reason}; holds {held}",
        "incomplete": {"reason": reason, "running": running, "files": files},
    }


def _size(size: int) -> str:
    """A file's size as people read it: `512 B`, `2.1 MB`."""
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if size >= scale:
            return f"{number(size / scale)} {unit}"
    return f"{size} B"


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
