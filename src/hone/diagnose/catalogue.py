"""The small catalogue that maps a bottleneck kind to knobs and advice (catalogue.yaml).

Knobs are hone knob definitions; `applicable` keeps only those this machine has (a sysctl that
moved to debugfs, a disk scheduler the kernel lacks), so a suggested project can run here."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

CATALOGUE = Path(__file__).with_name("catalogue.yaml")


@dataclass
class Suggestion:
    """One knob to tune, why, and its hone definition (None when this machine lacks it)."""

    name: str
    why: str
    knob: dict
    present: bool
    reason: str = ""  # why it is not present

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "why": self.why,
            "knob": self.knob,
            "present": self.present,
            "reason": self.reason,
        }


@cache
def load() -> dict:
    return yaml.safe_load(CATALOGUE.read_text())


def title(kind: str) -> str:
    return load()["kinds"].get(kind, {}).get("title", kind)


def advice(kind: str) -> list[str]:
    return list(load()["kinds"].get(kind, {}).get("advice", []))


def knobs_for(kinds: list[str]) -> list[Suggestion]:
    """Knobs for these kinds, most important kind first, each knob once."""
    catalogue = load()
    seen: list[str] = []
    for kind in kinds:
        for name in catalogue["kinds"].get(kind, {}).get("knobs", []):
            if name not in seen:
                seen.append(name)
    return [_resolve(name, catalogue["knobs"][name]) for name in seen]


def _resolve(name: str, entry: dict) -> Suggestion:
    knob = dict(entry["knob"])
    if "sysfs" in knob and "{disk}" in knob["sysfs"]:
        # Here, not at the top: importing hone.project loads numpy, which `hone` would
        # otherwise pay for at every start.
        from hone.project.devices import detect_disk

        knob["sysfs"] = knob["sysfs"].replace("{disk}", detect_disk() or "sda")
    path = _path_of(knob)
    if not path.exists():
        return Suggestion(name, entry["why"], knob, False, f"{path} does not exist on this kernel")
    if "sysfs" in knob and knob["type"] == "categorical":
        offered = path.read_text().replace("[", "").replace("]", "").split()
        values = [v for v in knob["values"] if v in offered] or offered
        if len(values) < 2:
            return Suggestion(name, entry["why"], knob, False, f"{path} offers only {values}")
        knob["values"] = values
    return Suggestion(name, entry["why"], knob, True)


def _path_of(knob: dict) -> Path:
    if "sysctl" in knob:
        return Path("/proc/sys") / knob["sysctl"].replace(".", "/")
    return Path(knob["sysfs"])
