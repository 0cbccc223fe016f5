"""What the trial-loop and crash tests share besides fixtures: a project whose knobs are a
number kept in a file and vm.swappiness (a real kernel setting, put back by every test)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

SWAPPINESS = Path("/proc/sys/vm/swappiness")


def write_project(
    folder: Path,
    name: str,
    swappiness: list[int],
    *,
    timeout: float,
    tuning: dict[str, Any],
    knobs: dict[str, Any] | None = None,
    metrics: dict[str, Any] | None = None,
    **sections: Any,
) -> Path:
    """folder/hone.yaml: the given `knobs` first, then `level` (1 to 9, in level.txt) and
    vm.swappiness over `swappiness`; `python3 bench.py` prints `score: N` (maximised), and
    any further `metrics` and top-level `sections` (a workload) as given."""
    project = {
        "name": name,
        **sections,
        "knobs": {
            **(knobs or {}),
            "level": {
                "type": "int",
                "range": [1, 9],
                "shell": {"get": "cat level.txt", "set": 'echo "$value" > level.txt'},
            },
            "swappiness": {"type": "ordinal", "values": swappiness, "sysctl": "vm.swappiness"},
        },
        "benchmark": {"command": "python3 bench.py", "timeout": timeout},
        "metrics": {
            "score": {"pattern": r"score: (\S+)", "direction": "maximize"},
            **(metrics or {}),
        },
        "tuning": tuning,
    }
    path = folder / "hone.yaml"
    path.write_text(yaml.safe_dump(project, sort_keys=False))
    return path
