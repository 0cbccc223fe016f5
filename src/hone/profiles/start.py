"""A new tuning project that starts from a static profile (`hone new`).

A profile is someone's best guess for a kind of workload; a study can check that guess on the
user's own benchmark and search around it. Each `[sysctl]` and `[sysfs]` item of the profile
becomes a knob whose range comes from, in order: hone's knob catalogue
(hone/diagnose/catalogue.yaml), A-Tune's catalogue when one is given (`tuning_params_all.yaml`,
read as it is), the choices the sysfs file itself offers, or, for a number no catalogue knows,
from half the smaller to twice the larger of the profile's value and the machine's. The
profile's values are the study's first configuration (`tuning: {start: [...]}`), measured right
after the baseline. Items that are not one searchable value (services, limits, scripts, kernel
command line, several numbers in one sysctl) are listed as left out, with the reason."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hone.errors import ActuationError, HoneError
from hone.knobs.sysctl import SysctlActuator
from hone.knobs.sysfs import SysfsActuator
from hone.profiles.library import Profile
from hone.project.yamlio import dump_with_header
from hone.space import Domain
from hone.space.domains import LIMIT

#: Applications hone knows by name, and the workload class (a built-in profile, hone-CLASS).
APPS = {
    "memcached": "in-memory-database",
    "redis": "in-memory-database",
    "nginx": "web",
    "apache": "web",
    "tomcat": "web",
    "postgresql": "database",
    "mysql": "database",
    "mariadb": "database",
    "sqlite": "database",
    "kafka": "storage",
    "ceph": "storage",
}
CLASSES = ("idle", "compute", "memory", "storage", "web", "in-memory-database", "database",
           "virtualization")  # fmt: skip
PLACEHOLDER = (
    "echo 'TODO: replace this command with your benchmark; it must print throughput: N'; "
    "echo 'throughput: 0'"
)
LEFT_OUT = {
    "systemctl": "a service is switched on or off by `hone profile apply`, not searched",
    "ulimit": "limits apply to new sessions of a user, not to a running benchmark",
    "script": "a script item is a procedure, not one value",
    "bootloader.grub2": "the kernel command line needs a reboot",
}


@dataclass
class Drafted:
    """One knob of the new project: its hone definition, the profile's value, and where its
    range came from."""

    name: str
    knob: dict[str, Any]
    start: Any
    source: str


def profile_for(workload: str) -> str:
    """The profile of a workload class or a known application (`memcached` -> hone-in-...).
    Every class `hone analyze` names is one: messaging and big-data have no profile of their
    own and take the one analyze maps them to."""
    from hone.analyze.dataset import CLASS_PROFILES

    cls = APPS.get(workload.lower(), workload.lower())
    if cls in CLASS_PROFILES:
        return CLASS_PROFILES[cls]
    if cls not in CLASSES:
        known = ", ".join(sorted([*APPS, *CLASSES, *CLASS_PROFILES]))
        raise HoneError(f"unknown workload {workload!r} (known: {known})")
    return f"hone-{cls}"


def atune_catalogue(path: Path) -> dict[str, Domain]:
    """Knob name -> domain from A-Tune's catalogue (a server YAML of every knob it knows)."""
    from hone.project import atune
    from hone.project.yamlio import load_yaml

    doc = load_yaml(path)
    items = doc.get("object") if isinstance(doc, dict) else None
    if not isinstance(items, list) or not items:
        raise HoneError(
            "not an A-Tune knob catalogue: it has no `object` list of knobs"
            " (A-Tune's is tuning_params_all.yaml)",
            file=path,
        )
    found = {}
    for item in items:
        try:
            found[str(item["name"])] = atune._domain(item["info"])
        except (HoneError, KeyError, TypeError):
            continue  # a knob this catalogue describes badly is simply not used
    return found


def draft(
    profile: Profile, atune: dict[str, Domain] | None = None
) -> tuple[list[Drafted], list[str]]:
    """The knobs of the profile's searchable items, and the items left out with the reason."""
    from hone.diagnose import catalogue

    ours = {}
    for name, entry in catalogue.load()["knobs"].items():
        knob = entry["knob"]
        if "sysctl" in knob:
            ours[("sysctl", knob["sysctl"])] = (name, knob)
        elif "sysfs" in knob and "{" not in knob["sysfs"]:
            ours[("sysfs", knob["sysfs"])] = (name, knob)
    drafted, left = [], []
    for item in profile.items:
        where = f"[{item.section}] {item.key} = {item.value}"
        if item.section not in ("sysctl", "sysfs"):
            reason = LEFT_OUT.get(item.section, "advice or a check, not a setting")
            left.append(f"{where}: {reason}")
            continue
        try:
            drafted.append(_knob(item.section, item.key, item.value, ours, atune or {}))
        except ValueError as reason:
            left.append(f"{where}: {reason}")
    return drafted, left


def _knob(section: str, key: str, value: str, ours: dict, atune: dict[str, Domain]) -> Drafted:
    from hone.project.convert import domain_entry

    if section == "sysctl":
        where, actuator = {"sysctl": key}, SysctlActuator(key)
        name = key
    else:
        path = "/sys/" + key.lstrip("/")
        where, actuator = {"sysfs": path}, SysfsActuator(path)
        name = re.sub(r"[^A-Za-z0-9_.-]+", ".", key.strip("/"))
    if len(value.split()) != 1:
        raise ValueError("several numbers in one value: not searched as one range")
    try:
        current = actuator.get()
    except ActuationError as error:
        raise ValueError(f"not on this machine ({error.message})") from None
    match = ours.get((section, where[section]))
    if match:
        name, knob = match[0], {k: v for k, v in match[1].items() if k not in where}
        source = "hone's knob catalogue"
    elif name in atune:
        knob, source = domain_entry(atune[name]), "A-Tune's knob catalogue"
    else:
        knob, source = _around(value, current, actuator)
    knob = _holding(knob, value)
    return Drafted(name, {**knob, **where}, _typed(knob, value), source)


def _around(value: str, current: str, actuator: SysfsActuator | SysctlActuator) -> tuple[dict, str]:
    """A range no catalogue gives: the file's own choices, or around the two numbers."""
    if isinstance(actuator, SysfsActuator):
        shown = Path(actuator.path).read_text()
        if "[" in shown:
            choices = shown.replace("[", "").replace("]", "").split()
            return {"type": "categorical", "values": choices}, "the choices the file offers"
    try:
        numbers = sorted({int(value), int(current)})
    except ValueError:
        values = list(dict.fromkeys([current, value]))
        if len(values) < 2:
            raise ValueError(
                "no catalogue knows its values and the machine has it already"
            ) from None
        return {"type": "categorical", "values": values}, "the machine's value and the profile's"
    if numbers[-1] <= 16:  # a switch or a mode: values outside these two may not exist
        if len(numbers) < 2:
            raise ValueError("no catalogue knows its values and the machine has it already")
        return {"type": "int", "range": numbers}, "the machine's value and the profile's"
    # an "unlimited" machine value (kernel.shmall is 2^64 - 2^24) caps at the largest knob value
    if abs(int(value)) > LIMIT:
        raise ValueError(f"beyond the largest value a knob may take ({LIMIT:g})")
    low, high = max(0, numbers[0] // 2), min(numbers[-1] * 2, int(LIMIT))
    knob = {"type": "int", "range": [low, high], "log": low > 0}
    return knob, "half the smaller to twice the larger of the machine's and the profile's value"


def _holding(knob: dict, value: str) -> dict:
    """The knob with its range widened, or its values extended, to hold the profile's value."""
    knob = dict(knob)
    typed = _typed(knob, value)
    if "range" in knob:
        low, high = knob["range"]
        knob["range"] = [min(low, typed), max(high, typed)]
        if (typed - knob["range"][0]) % knob.get("step", 1):
            knob.pop("step")  # off the catalogue's grid: every value, so the profile's too
    elif typed not in knob["values"]:
        knob["values"] = [*knob["values"], typed]
    return knob


def _typed(knob: dict, value: str) -> Any:
    if knob["type"] in ("int", "ordinal"):
        try:
            return int(value)
        except ValueError:
            return float(value)
    if knob["type"] == "float":
        return float(value)
    return value


def metric_option(text: str, minimize: bool) -> tuple[str, str, str]:
    """`--metric NAME=REGEX` as (name, pattern, direction), its regex checked here: a bad one
    was written into a hone.yaml that `hone check` then refused."""
    name, sep, pattern = text.partition("=")
    if not sep or not name or not pattern:
        raise HoneError(f"--metric must be NAME=REGEX, got {text!r}")
    try:
        groups = re.compile(pattern, re.MULTILINE).groups
    except re.error as exc:
        raise HoneError(f"--metric {text!r}: bad regex: {exc}") from None
    if groups < 1:
        raise HoneError(f"--metric {text!r}: the regex needs one (group) around the figure")
    return name, pattern, "minimize" if minimize else "maximize"


def write(
    folder: Path,
    profile: Profile,
    drafted: list[Drafted],
    left: list[str],
    benchmark: str | None = None,
    metric: tuple[str, str, str] | None = None,
) -> Path:
    """FOLDER/hone.yaml (never over an existing one): the knobs, the profile's values as the
    first configuration, the benchmark (a placeholder marked TODO when none is given)."""
    path = folder / "hone.yaml"
    if path.exists():
        raise HoneError("already exists; choose another folder", file=path)
    if not drafted:
        raise HoneError(f"profile {profile.name!r} has no sysctl or sysfs item this machine has")
    name, pattern, direction = metric or ("throughput", r"throughput: ([0-9.]+)", "maximize")
    project = {
        "name": re.sub(r"[^A-Za-z0-9_.-]+", "-", folder.resolve().name).strip("-.") or "project",
        "description": f"Knobs of profile {profile.name}, starting from its values",
        "knobs": {d.name: d.knob for d in drafted},
        "benchmark": {"command": benchmark or PLACEHOLDER, "timeout": 600},
        "metrics": {name: {"pattern": pattern, "direction": direction}},
        "tuning": {"budget": 30, "baseline": 3, "start": [{d.name: d.start for d in drafted}]},
    }
    header = [f"# Written by `hone new` from profile {profile.name} ({profile.path}).",
              "# The profile's values are the first configuration measured (tuning.start).",
              "# Where each range comes from:"]  # fmt: skip
    header += [f"#   {d.name}: {d.source}" for d in drafted]
    if left:
        header.append("# Left out of the profile:")
        header += [f"#   {line}" for line in left]
    if not benchmark:
        header += ["# TODO: the benchmark is a placeholder. Replace its command with one that",
                   "# loads the workload and prints the metric, then: hone check ."]  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_with_header(header, project))
    return path
