"""speedscope's file format (https://www.speedscope.app): one "sampled" profile per thread.

Frames are shared between threads (`shared.frames`, with the module as `file`); each profile
lists its stacks root first as frame indices with their sample counts as weights, busiest
thread first. Open the file at speedscope.app or with `speedscope FILE`.
"""

from __future__ import annotations

import json
from typing import Any

from hone import __version__
from hone.diagnose.fold import Frame
from hone.diagnose.profile import Profile

SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def to_speedscope(profile: Profile, name: str | None = None) -> dict[str, Any]:
    """The profile as a speedscope document (a dict ready for json.dump)."""
    index: dict[Frame, int] = {}
    per_thread: dict[str, tuple[list[list[int]], list[int]]] = {}
    for (thread, frames), count in profile.stacks.items():
        if not frames or count <= 0:
            continue
        samples, weights = per_thread.setdefault(thread, ([], []))
        samples.append([index.setdefault(frame, len(index)) for frame in frames])
        weights.append(count)
    profiles = []
    for thread, (samples, weights) in sorted(per_thread.items(), key=lambda i: -sum(i[1][1])):
        profiles.append(
            {
                "type": "sampled",
                "name": thread,
                "unit": "none",
                "startValue": 0,
                "endValue": sum(weights),
                "samples": samples,
                "weights": weights,
            }
        )
    shared = []
    for frame in index:
        entry: dict[str, str] = {"name": frame.function}
        if frame.module:
            entry["file"] = frame.module
        shared.append(entry)
    return {
        "$schema": SCHEMA,
        "shared": {"frames": shared},
        "profiles": profiles,
        "name": name or profile.target or "hone profile",
        "activeProfileIndex": 0,
        "exporter": f"hone {__version__}",
    }


def speedscope_json(profile: Profile, name: str | None = None) -> str:
    """The speedscope document as compact JSON text."""
    return json.dumps(to_speedscope(profile, name), separators=(",", ":"))
