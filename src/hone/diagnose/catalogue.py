"""The small catalogue that maps a bottleneck kind to knobs and advice (catalogue.yaml).

Knobs are hone knob definitions; `applicable` keeps only those this machine has (a sysctl that
moved to debugfs, a disk scheduler the kernel lacks), so a suggested project can run here."""

from __future__ import annotations

import re
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
    """The catalogue, parsed with libyaml when PyYAML has it: 3 ms instead of 32."""
    return yaml.load(CATALOGUE.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def title(kind: str) -> str:
    return load()["kinds"].get(kind, {}).get("title", kind)


def advice(kind: str) -> list[str]:
    return list(load()["kinds"].get(kind, {}).get("advice", []))


def project_kind(kind: str) -> str | None:
    """The kind of project `--suggest-project` writes for this bottleneck when no kernel knob
    fits it (`compiler-flags` for CPU-bound code)."""
    return load()["kinds"].get(kind, {}).get("project")


def knobs_for(
    kinds: list[str], evidence: dict[str, str] | None = None, context: dict[str, str] | None = None
) -> list[Suggestion]:
    """Knobs for these kinds, most important kind first, each knob once; `evidence` maps a
    kind to the measurement that found it, which each of its knobs cites. `context` holds what
    the measurement found that a knob needs: `network` (the receiving device) and `busy_cpu`
    (the CPU the receive work piled on) for the per-queue RPS knobs."""
    catalogue = load()
    seen: dict[str, str] = {}
    for kind in kinds:
        for name in catalogue["kinds"].get(kind, {}).get("knobs", []):
            seen.setdefault(name, (evidence or {}).get(kind, ""))
    found: list[Suggestion] = []
    for name, cited in seen.items():
        entry = catalogue["knobs"][name]
        if entry.get("per") == "rx-queue":
            found += _per_queue(name, entry, cited, context or {})
        else:
            found.append(_resolve(name, entry, cited))
    return found


def _per_queue(name: str, entry: dict, evidence: str, context: dict[str, str]) -> list[Suggestion]:
    """One knob per receive queue of the measured device, named NAME.DEVICE.rx-N."""
    device = context.get("network", "")
    queues = sorted(Path(f"/sys/class/net/{device}/queues").glob("rx-*")) if device else []
    if not queues:
        reason = (
            f"/sys/class/net/{device} has no receive queue here"
            if device
            else "no receiving device was measured"
        )
        return [Suggestion(name, entry["why"], dict(entry["knob"]), False, reason, evidence)]
    found = []
    for queue in queues:
        knob = dict(entry["knob"])
        knob["sysfs"] = knob["sysfs"].format(network=device, queue=queue.name)
        if "masks" in entry:
            knob["values"] = _masks(entry["masks"], Path(knob["sysfs"]), context)
        label = re.sub(r"[^A-Za-z0-9_.-]+", "-", device)  # knob names allow no more
        suggestion = _present(f"{name}.{label}.{queue.name}", {**entry, "knob": knob})
        suggestion.evidence = evidence
        found.append(suggestion)
    return found


def _masks(kinds: list[str], path: Path, context: dict[str, str]) -> list[str]:
    """CPU masks as the file shows them: none (0), every CPU but the busy one, every CPU."""
    from hone.diagnose.softirq import cpu_mask

    try:
        like = path.read_text().strip()
    except OSError:
        like = "0"
    cpus = sorted(int(c.name[3:]) for c in Path("/sys/devices/system/cpu").glob("cpu[0-9]*"))
    busy = int(context.get("busy_cpu", "-1") or -1)
    chosen = {"none": [], "others": [c for c in cpus if c != busy], "all": cpus}
    values: list[str] = []
    for kind in kinds:
        mask = cpu_mask(chosen[kind], like)
        if mask not in values:
            values.append(mask)
    return values


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
    shown = path.read_text() if "sysfs" in knob and knob["type"] == "categorical" else ""
    if "[" in shown:  # a list of choices, the active one in brackets
        offered = shown.replace("[", "").replace("]", "").split()
        values = [v for v in knob["values"] if v in offered] or offered
        if len(values) < 2:
            return Suggestion(name, entry["why"], knob, False, f"{path} offers only {values}")
        knob["values"] = values
    return Suggestion(name, entry["why"], knob, True)


def _path_of(knob: dict) -> Path:
    if "sysctl" in knob:
        return Path("/proc/sys") / knob["sysctl"].replace(".", "/")
    return Path(knob["sysfs"])
