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
    #: The measurement that points to this knob (the finding of the diagnosis, in words).
    evidence: str = ""

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "why": self.why,
            "knob": self.knob,
            "present": self.present,
            "reason": self.reason,
            "evidence": self.evidence,
        }


@cache
def load() -> dict:
    return yaml.safe_load(CATALOGUE.read_text())


def title(kind: str) -> str:
    return load()["kinds"].get(kind, {}).get("title", kind)


def advice(kind: str) -> list[str]:
    return list(load()["kinds"].get(kind, {}).get("advice", []))


def project_kind(kind: str) -> str | None:
    """The kind of project `--suggest-project` writes for this bottleneck when no kernel knob
    fits it (`compiler-flags` for CPU-bound code)."""
    return load()["kinds"].get(kind, {}).get("project")


def knobs_for(kinds: list[str], evidence: dict[str, str] | None = None) -> list[Suggestion]:
    """Knobs for these kinds, most important kind first, each knob once; `evidence` maps a
    kind to the measurement that found it, which each of its knobs cites."""
    catalogue = load()
    seen: dict[str, str] = {}
    for kind in kinds:
        for name in catalogue["kinds"].get(kind, {}).get("knobs", []):
            seen.setdefault(name, (evidence or {}).get(kind, ""))
    return [_resolve(name, catalogue["knobs"][name], cited) for name, cited in seen.items()]


def numa_nodes() -> int:
    return len(list(Path("/sys/devices/system/node").glob("node[0-9]*"))) or 1


def _resolve(name: str, entry: dict, evidence: str = "") -> Suggestion:
    suggestion = _present(name, entry)
    suggestion.evidence = evidence
    if suggestion.present and entry.get("needs") == "numa" and numa_nodes() < 2:
        suggestion.present = False
        suggestion.reason = "one NUMA node: there is nothing to balance between nodes"
    return suggestion


def _present(name: str, entry: dict) -> Suggestion:
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
