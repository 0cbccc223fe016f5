"""hone's own single-file project format (documented in docs/project-format.md)."""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from hone.errors import ActuationError
from hone.knobs import Actuator, actuator_from_spec, actuator_kinds
from hone.knobs.risk import Risk, catalogued, identities, parse_risk, same_value
from hone.optimizers import optimizer_names
from hone.project.common import (
    boolean,
    check_declared_values,
    check_keys,
    check_output_command,
    expect_mapping,
    number,
    refuse_control,
    same_setting,
    text,
    words,
)
from hone.project.devices import device_environment
from hone.project.hosts import PLACE_KEYS, metric_place, parse_hosts
from hone.project.model import (
    Benchmark,
    FeatureFilter,
    Knob,
    Limit,
    Metric,
    Project,
    Tuning,
    Workload,
)
from hone.project.yamlio import Node, NodeList, load_yaml
from hone.space import (
    Boolean,
    Categorical,
    Constraint,
    Domain,
    FloatRange,
    IntRange,
    Ordinal,
    SearchSpace,
    Value,
)
from hone.space.domains import LIMIT
from hone.workload.launch import LaunchSpec

TOP_KEYS = (
    "name",
    "description",
    "directory",
    "workload",
    "knobs",
    "constraints",
    "benchmark",
    "metrics",
    "tuning",
    "ssh",
    "hosts",
)
DOMAIN_KEYS = (
    "type",
    "range",
    "step",
    "log",
    "values",
    "default",
    "restart",
    "description",
    "on",
    "off",
    "flag_style",
    "risk",
    "group",
)
KNOB_TYPES = ("int", "float", "ordinal", "categorical", "bool")
#: A project's name: it names the journal, the studies and the work folder.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
#: A bool knob's words for its two values, and their defaults.
BOOL_WORDS = (("on", "1"), ("off", "0"))
#: The field a scalar actuator value fills, e.g. `sysctl: vm.swappiness`.
PRIMARY_FIELD = {"sysctl": "key", "sysfs": "path", "flag": "flag", "env": "variable"}


def load_hone(path: Path) -> Project:
    doc = load_yaml(path)
    if not isinstance(doc, Node):
        raise _error(path, "a hone project is a YAML mapping (name, knobs, benchmark, metrics)")
    check_keys(doc, TOP_KEYS, required=("name", "knobs", "benchmark", "metrics"))
    directory = (path.parent / (text(doc, "directory") or ".")).resolve()
    workload = _workload(doc.get("workload"), doc)
    cluster = parse_hosts(doc, directory)
    hosts, groups = cluster.hosts, cluster.groups
    knobs_node = expect_mapping(doc["knobs"], doc, "knobs")
    if not knobs_node:
        raise doc.error("knobs", "needs at least one knob")
    knobs = [
        _knob(
            refuse_control(knobs_node, name, name, "knob name"),
            expect_mapping(spec, knobs_node, name),
            directory,
            workload,
            cluster.workloads,
        )
        for name, spec in knobs_node.items()
    ]
    seen: dict[str, str] = {}
    for knob in knobs:
        if knob.actuator.kind == "shell":  # a set command's text does not say what it changes
            continue
        first = seen.setdefault(same_setting(knob.actuator, knob.group), knob.name)
        if first != knob.name:
            raise knobs_node.error(
                knob.name,
                f"knob {knob.name!r} sets what knob {first!r} sets "
                f"({knob.actuator.describe()}): keep one",
            )
    constraints = _constraints(doc, {k.name: k.domain for k in knobs})
    _check_groups(knobs_node, knobs, groups)
    _one_knob_a_setting(knobs_node, knobs, groups)
    benchmark = _benchmark(doc)
    if benchmark.host is not None and benchmark.host not in hosts:
        raise doc["benchmark"].error("host", f"no host {benchmark.host!r} in hosts")
    return Project(
        name=_name(doc),
        description=text(doc, "description") or "",
        knobs=knobs,
        benchmark=benchmark,
        metrics=_metrics(doc, hosts, groups),
        directory=directory,
        sources=[path],
        workload=workload,
        tuning=_tuning(doc.get("tuning"), doc, knobs),
        constraints=constraints,
        hosts=hosts,
        groups=groups,
        group_workloads=cluster.workloads,
    )


#: Settings that hold one value (a file holds many keys, each a knob of its own).
ONE_VALUE = ("sysctl:", "sysfs:", "grub:", "systemctl:", "script:")


def _one_knob_a_setting(node: Node, knobs: list[Knob], groups: dict[str, list[str]]) -> None:
    """Two knobs of one setting on one machine (this one, or a host both their groups hold)
    would write one value over the other: every trial would record values it never ran
    (here), or fail reading back the first knob's (on hosts)."""
    seen: dict[tuple[str | None, str], str] = {}
    for knob in knobs:
        setting = knob.actuator.setting()
        if not setting or not setting.startswith(ONE_VALUE):
            continue
        for host in groups.get(knob.group, []) if knob.group is not None else [None]:
            other = seen.setdefault((host, setting), knob.name)
            if other != knob.name:
                where = f" on host {host}" if host is not None else ""
                raise node.error(
                    knob.name,
                    f"knobs {other!r} and {knob.name!r} both set {setting}{where}: "
                    "each trial would write one value over the other",
                )


def _check_groups(node: Node, knobs: list[Knob], groups: dict[str, list[str]]) -> None:
    """A knob's group must exist, and its kind must be one a remote host can take."""
    from hone.cluster.remote import remote_knob

    for knob in knobs:
        if knob.group is None:
            continue
        spec = node[knob.name]
        if knob.group not in groups:
            known = ", ".join(groups) or "none: add a hosts section"
            raise spec.error("group", f"knob {knob.name!r}: no group {knob.group!r} ({known})")
        try:
            remote_knob(knob.actuator)
        except ActuationError as exc:
            raise spec.error("group", f"knob {knob.name!r}: {exc.message}") from None


def _error(path: Path, message: str) -> Exception:
    from hone.errors import HoneError

    return HoneError(message, file=path, line=1)


def _name(doc: Node) -> str:
    name = text(doc, "name") or ""
    if not NAME.fullmatch(name):
        raise doc.error("name", "must be 1-128 letters, digits, '_', '.' or '-'")
    return name


def _workload(node: Any, doc: Node) -> Workload:
    if node is None:
        return Workload()
    node = expect_mapping(node, doc, "workload")
    check_keys(
        node, ("setup", "start", "stop", "process", "ready", "ready_timeout", "keep_running")
    )
    launch = None
    if node.get("process") is not None:
        process = expect_mapping(node["process"], node, "process")
        check_keys(process, ("command", "env", "stop_signal"), required=("command",))
        command = process["command"]
        if isinstance(command, str):
            command = command.split()
        if not isinstance(command, list) or not command:
            raise process.error("command", "must be a list of arguments (or one string)")
        env = process.get("env") or {}
        if not isinstance(env, dict):
            raise process.error("env", "must be a mapping of variable to value")
        stop_signal = text(process, "stop_signal", "TERM")
        if stop_signal not in ("TERM", "KILL"):
            raise process.error("stop_signal", "must be TERM or KILL")
        launch = LaunchSpec(
            words(process, "command", command),
            env=dict(zip(env, words(process, "env", env.values()), strict=True)),
            stop_signal=stop_signal or "TERM",
        )
        if node.get("start"):
            raise node.error("process", "give either process or start/stop, not both")
    return Workload(
        setup=text(node, "setup"),
        start=text(node, "start"),
        stop=text(node, "stop"),
        launch=launch,
        ready=text(node, "ready"),
        ready_timeout=number(node, "ready_timeout", 60.0, low=0.001),
        owned=not boolean(node, "keep_running", False),
    )


def _knob(
    name: str, node: Node, directory: Path, workload: Workload, on_hosts: dict[str, Any]
) -> Knob:
    """`on_hosts`: the groups that have a workload (a knob on one of them restarts that)."""
    kinds = [k for k in actuator_kinds() if k != "remote"]  # a group, not a kind, puts it there
    check_keys(node, (*DOMAIN_KEYS, *kinds))
    chosen = [k for k in kinds if k in node]
    if len(chosen) != 1:
        what = "no way to set it" if not chosen else f"several ({', '.join(chosen)})"
        raise node.error(None, f"knob {name!r} needs exactly one of {', '.join(kinds)}: {what}")
    domain = _domain(name, node)
    actuator = _actuator(name, chosen[0], node, directory, workload)
    check_declared_values(node, chosen[0], name, actuator, domain)
    reference = None
    if node.get("default") is not None:
        reference = _value(node, "default", domain)
    elif not actuator.readable:
        raise node.error(
            chosen[0], f"knob {name!r}: its current value cannot be read; give it a default"
        )
    # Without a workload there is nothing to restart: the next benchmark run reads the value.
    group = text(node, "group")
    managed = workload.managed if group is None else group in on_hosts
    restart = boolean(node, "restart", actuator.needs_restart and managed)
    if restart and not managed:
        where = (
            "the project has no workload to restart (add workload: start/stop or process)"
            if group is None
            else f"group {group!r} has no workload (add hosts: {group}: workload: start, "
            "stop, ready)"
        )
        raise node.error("restart", f"knob {name!r} needs a restart but {where}")
    description = text(node, "description") or ""
    risk = _risk(name, node, domain, actuator)
    source = (node.file, node.line_of(chosen[0]), chosen[0])
    return Knob(name, domain, actuator, restart, reference, description, risk, group, source)


def _risk(name: str, node: Node, domain: Domain, actuator: Actuator) -> Risk | None:
    """The knob's own `risk` (checked against its values), else the catalogue's."""
    if "risk" not in node:
        return catalogued(identities(name, actuator.spec()))
    raw = node["risk"]
    if isinstance(raw, Node):  # risky values spelled as the knob's own values are
        raw = {kind: _risky_words(raw, kind, domain) for kind in raw}
    try:
        risk = parse_risk(raw)
    except ValueError as exc:
        raise node.error("risk", f"knob {name!r}: {exc}") from None
    declared = [v if isinstance(v, str) else domain.format(v) for v in domain.values() or ()]
    for values in (risk.values if risk else {}).values():
        for value in values:
            if declared and not any(same_value(value, d) for d in declared):
                raise node.error(
                    "risk", f"knob {name!r}: risky value {value!r} is not one of its values"
                )
    return risk


def _risky_words(node: Node, kind: str, domain: Domain) -> Any:
    """A kind's risky values as the text written for them: a bool knob's `false` is its off
    word (`0`, `no`), any other YAML boolean `true` or `false`, as among a knob's values."""
    values = node[kind]
    if not isinstance(values, list):
        return values  # `any`, or a shape parse_risk refuses
    spelled = words(node, kind, values)
    return [
        domain.format(value) if isinstance(value, bool) and domain.contains(value) else word
        for value, word in zip(values, spelled, strict=True)
    ]


def _domain(name: str, node: Node) -> Domain:
    kind = text(node, "type")
    if kind not in KNOB_TYPES:
        raise node.error("type", f"knob {name!r}: type must be one of {', '.join(KNOB_TYPES)}")
    try:
        if kind in ("int", "float"):
            bounds = node.get("range")
            if not isinstance(bounds, list) or len(bounds) != 2:
                if isinstance(node.get("values"), list):
                    return Ordinal(tuple(_numbers(node, "values")))
                raise node.error("range", f"knob {name!r}: needs range: [low, high] or values")
            low, high = _numbers(node, "range")
            log = boolean(node, "log", False)
            if kind == "int":
                for bound in (low, high):  # int() would search another range than the one given
                    if bound != int(bound):
                        raise node.error(
                            "range", f"knob {name!r}: {bound!r} is not a whole number (type int)"
                        )
                # a step is as large as the range may be (a byte size), not a count
                step = number(node, "step", 1, integer=True, low=1, high=LIMIT)
                _step_fits(node, name, step, low, high)
                return IntRange(int(low), int(high), step, log)
            step = number(node, "step", None)
            if step is not None and step <= 0:
                raise node.error("step", f"knob {name!r}: must be a number above 0, not {step:g}")
            _step_fits(node, name, step, low, high)
            return FloatRange(float(low), float(high), step, log)
        values = node.get("values")
        if kind == "bool":
            on, off = (words(node, key, [node.get(key, text)])[0] for key, text in BOOL_WORDS)
            return Boolean(on, off)
        if not isinstance(values, list) or not values:
            raise node.error("values", f"knob {name!r}: needs a non-empty values list")
        if kind == "ordinal":
            return Ordinal(tuple(_numbers(node, "values")))
        return Categorical(
            tuple(
                refuse_control(node, "values", v, "value", tab=True)
                for v in words(node, "values", values)
            )
        )
    except ValueError as exc:
        raise node.error(
            "range" if "range" in node else "values", f"knob {name!r}: {exc}"
        ) from None


def _step_fits(node: Node, name: str, step: float | None, low: float, high: float) -> None:
    """A step wider than the range leaves one value of it to search: a typo (`step: 200` for
    `range: [10, 90]`, or a range missing a zero), not a search."""
    if step is not None and high > low and step > high - low:
        raise node.error(
            "step",
            f"knob {name!r}: step {step:g} is wider than the range [{low:g}, {high:g}]: "
            f"only {low:g} could be tried",
        )


def _numbers(node: Node, key: str) -> list[int | float]:
    result: list[int | float] = []
    for value in node[key]:
        if isinstance(value, bool) or not isinstance(value, int | float):
            shown = str(value).lower() if isinstance(value, bool) else repr(value)
            raise node.error(key, f"{shown} is not a number")
        if not (math.isfinite(value) and abs(value) <= LIMIT):
            raise node.error(key, f"{value!r} is not a finite number within +-{LIMIT:g}")
        result.append(value)
    return result


def _value(node: Node, key: str, domain: Domain) -> Any:
    value = node[key]
    candidate = value if domain.contains(value) else None
    if candidate is None:
        try:
            candidate = domain.parse(text(node, key) or "")
        except ValueError:
            candidate = None
    if candidate is None or not domain.contains(candidate):
        raise node.error(key, f"{value!r} is not in {domain.describe()}")
    return candidate


def _actuator(name: str, kind: str, node: Node, directory: Path, workload: Workload) -> Actuator:
    raw = node[kind]
    if kind == "shell":
        shell = expect_mapping(raw, node, kind)
        check_keys(shell, ("get", "set", "timeout"), required=("set",))
        spec: dict[str, Any] = {
            "kind": "shell",
            "set_command": text(shell, "set"),
            "get_command": text(shell, "get"),
            "cwd": str(directory),
            "env": device_environment(),
        }
        if "timeout" in shell:
            spec["timeout"] = number(shell, "timeout", low=0.001)
    elif isinstance(raw, Node):
        spec = {"kind": kind, **_options(kind, raw)}
    elif kind in PRIMARY_FIELD:
        spec = {"kind": kind, PRIMARY_FIELD[kind]: text(node, kind) or ""}
    else:
        raise node.error(kind, f"knob {name!r}: {kind} needs a mapping of options")
    relative = not str(spec.get("file", "/")).startswith(("/", "$"))
    if kind == "config" and relative:
        spec["file"] = str(directory / str(spec["file"]))
    if kind == "flag" and "flag_style" in node:
        spec["style"] = text(node, "flag_style")
    if kind in ("flag", "env") and workload.launch is None:
        raise node.error(kind, f"knob {name!r}: a {kind} knob needs workload: process")
    for field_, value in spec.items():  # a path with one was a ValueError traceback
        if isinstance(value, str) and "\x00" in value:
            raise node.error(kind, f"knob {name!r}: its {field_} holds a NUL byte")
    try:
        return actuator_from_spec(spec, launch=workload.launch)
    except ActuationError as exc:
        raise node.error(kind, f"knob {name!r}: {exc.message}") from None


def _options(kind: str, node: Node) -> dict[str, Any]:
    """A knob's options given as a mapping (`config: {file, key, ...}`), each checked against
    the type its actuator declares: a list or a null where text is wanted would otherwise reach
    the system as "['level']" or "None", and `restart: no` (the word) would count as true."""
    fields = [f for f in dataclasses.fields(actuator_kinds()[kind]) if f.name != "launch"]
    required = [f.name for f in fields if f.default is dataclasses.MISSING]
    check_keys(node, [f.name for f in fields], required=required)
    options: dict[str, Any] = {}
    for f in fields:
        if f.name not in node:
            continue
        if f.type == "bool":
            options[f.name] = boolean(node, f.name, bool(f.default))
        elif f.type == "float":
            options[f.name] = number(node, f.name, low=0.001)
        else:  # text: a path, a key, a unit, a section
            options[f.name] = text(node, f.name)
    return options


def _constraints(doc: Node, domains: dict[str, Domain]) -> list[Constraint]:
    """The constraints, each checked before any run (the search would stop at its first
    proposal): one that mixes text and numbers, and all of them together satisfied by none of
    the configurations the search would sample."""
    items = doc.get("constraints")
    if items is None:
        return []
    if not isinstance(items, NodeList):
        raise doc.error("constraints", "must be a list of expressions")
    result = []
    for index, item in enumerate(items):
        try:
            result.append(Constraint.parse(str(item), set(domains)))
            SearchSpace(domains, result[-1:]).check_types()
        except ValueError as exc:
            raise items.error(index, str(exc)) from None
    try:
        SearchSpace(domains, result).sample(np.random.default_rng(0))
    except ValueError as exc:
        raise doc.error("constraints", str(exc)) from None
    return result


def _benchmark(doc: Node) -> Benchmark:
    node = doc["benchmark"]
    if isinstance(node, str):
        return Benchmark(command=node)
    node = expect_mapping(node, doc, "benchmark")
    check_keys(node, ("command", "timeout", "repeats", "warmup", "host"), required=("command",))
    repeats = number(node, "repeats", 1, integer=True, low=1, high=1000)
    if repeats < 1:
        raise node.error("repeats", "must be at least 1")
    return Benchmark(
        command=text(node, "command") or "",
        timeout=number(node, "timeout", 600.0, low=0.001),
        repeats=repeats,
        warmup=boolean(node, "warmup", False),
        host=text(node, "host"),
    )


def _metrics(doc: Node, hosts: dict[str, Any], groups: dict[str, list[str]]) -> list[Metric]:
    node = expect_mapping(doc["metrics"], doc, "metrics")
    if not node:
        raise doc.error("metrics", "needs at least one metric")
    metrics = []
    for name, spec in node.items():
        refuse_control(node, name, name, "metric name")
        spec = expect_mapping(spec, node, name)
        check_keys(
            spec,
            ("pattern", "command", "direction", "weight", "limit", "unit", *PLACE_KEYS),
            required=("direction",),
        )
        place = metric_place(spec, name, hosts, groups)
        direction = text(spec, "direction")
        if direction not in ("maximize", "minimize"):
            raise spec.error("direction", f"metric {name!r}: must be maximize or minimize")
        if ("pattern" in spec) == ("command" in spec) and not place:
            raise spec.error(None, f"metric {name!r} needs exactly one of pattern or command")
        pattern = text(spec, "pattern")
        if pattern is not None:
            try:
                compiled = re.compile(pattern, re.MULTILINE)
            except re.error as exc:
                raise spec.error("pattern", f"metric {name!r}: bad regex: {exc}") from None
            if compiled.groups < 1:
                raise spec.error("pattern", f"metric {name!r}: the regex needs one (group)")
        check_output_command(spec, "command", name, text(spec, "command"))
        limit = None
        if spec.get("limit") is not None:
            try:
                limit = Limit.parse(str(spec["limit"]))
            except ValueError as exc:
                raise spec.error("limit", f"metric {name!r}: {exc}") from None
        metrics.append(
            Metric(
                name,
                direction,
                pattern,
                text(spec, "command"),
                number(spec, "weight", 1.0, low=0),
                limit,
                text(spec, "unit") or "",
                **place,
            )  # type: ignore[arg-type]
        )
    if not any(m.weight > 0 for m in metrics):
        raise doc.error("metrics", "at least one metric needs a weight above 0")
    return metrics


def _start(node: Node, knobs: list[Knob]) -> list[dict[str, Value]]:
    """`start`: configurations to measure first, each a mapping of some knobs to values."""
    points = node.get("start")
    if points is None:
        return []
    if not isinstance(points, list):
        raise node.error("start", "must be a list of mappings from knob names to values")
    domains = {k.name: k.domain for k in knobs}
    found = []
    for index, point in enumerate(points):
        point = expect_mapping(point, node, "start")
        if not point:
            raise node.error("start", f"point {index + 1} names no knob")
        for name in point:
            if name not in domains:
                raise point.error(name, f"start point {index + 1}: no knob named {name!r}")
        found.append({name: _value(point, name, domains[name]) for name in point})
    return found


def _tuning(node: Any, doc: Node, knobs: list[Knob]) -> Tuning:
    if node is None:
        return Tuning()
    node = expect_mapping(node, doc, "tuning")
    check_keys(
        node,
        (
            "engine",
            "budget",
            "baseline",
            "random_starts",
            "split_count",
            "confirm",
            "apply",
            "objective",
            "seed",
            "select",
            "start",
        ),
    )
    confirm = expect_mapping(node.get("confirm") or Node(), node, "confirm")
    check_keys(confirm, ("candidates", "rounds"))
    apply = text(node, "apply", "auto")
    if apply not in ("auto", "always", "never"):
        raise node.error("apply", "must be auto, always or never")
    objective = text(node, "objective", "weighted")
    if objective not in ("weighted", "atune"):
        raise node.error("objective", "must be weighted or atune")
    select = None
    if node.get("select") is not None:
        sel = expect_mapping(node["select"], node, "select")
        check_keys(sel, ("count", "trials"), required=("count",))
        select = FeatureFilter(
            "auto", 1, number(sel, "trials", 0, integer=True), number(sel, "count", 0, integer=True)
        )
    engine = text(node, "engine", "auto") or "auto"
    if engine.lower() not in optimizer_names():
        raise node.error(
            "engine", f"unknown engine {engine!r} (known: {', '.join(optimizer_names())})"
        )
    tuning = Tuning(
        engine=engine,
        budget=number(node, "budget", 30, integer=True, low=1),
        baseline_repeats=number(node, "baseline", 3, integer=True, low=1, high=1000),
        random_starts=number(node, "random_starts", None, integer=True),
        split_count=number(node, "split_count", None, integer=True),
        confirm_candidates=number(confirm, "candidates", 3, integer=True),
        confirm_rounds=number(confirm, "rounds", 3, integer=True, high=1000),
        apply=apply,  # type: ignore[arg-type]
        objective=objective,  # type: ignore[arg-type]
        seed=number(node, "seed", None, integer=True, high=2**32 - 1),
        feature_filter=select,
        start=_start(node, knobs),
    )
    if tuning.budget < 1:
        raise node.error("budget", "must be at least 1")
    if tuning.baseline_repeats < 1:
        raise node.error("baseline", "must be at least 1")
    return tuning
