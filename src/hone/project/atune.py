"""A-Tune's tuning project: a server YAML (knobs) and a client YAML (benchmark and goal).

Facts of the format are in shared/spec/atune-compat.md; the same files mean the same thing here,
but values reach commands quoted, numeric discrete knobs stay ordered and integers stay exact."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from hone.errors import HoneError
from hone.knobs.risk import catalogued
from hone.knobs.shell import ShellActuator
from hone.project.common import (
    boolean,
    check_declared_values,
    check_keys,
    check_output_command,
    expect_mapping,
    number,
    refuse_control,
    text,
    words,
)
from hone.project.devices import device_environment
from hone.project.model import (
    Benchmark,
    FeatureFilter,
    Knob,
    Metric,
    Project,
    Tuning,
    Workload,
)
from hone.project.yamlio import Node, load_yaml
from hone.shell import render
from hone.space import Categorical, Domain, FloatRange, IntRange, Ordinal
from hone.space.domains import LIMIT

SERVER_KEYS = ("project", "maxiterations", "startworkload", "stopworkload", "object")
CLIENT_KEYS = (
    "project",
    "engine",
    "iterations",
    "random_starts",
    "benchmark",
    "evaluations",
    "feature_filter_engine",
    "feature_filter_cycle",
    "feature_filter_iters",
    "feature_filter_count",
    "feature_selector",
    "split_count",
    "eval_fluctuation",
)
INFO_KEYS = (
    "desc",
    "get",
    "set",
    "needrestart",
    "type",
    "dtype",
    "scope",
    "step",
    "items",
    "options",
    "ref",
    "Except",  # nodes a knob must not be tuned on (distributed tuning); one node here
)
#: A-Tune's engine names (every one maps to a working hone optimiser), and hone's own.
ENGINES = (
    "auto",
    "random",
    "forest",
    "gbrt",
    "extraTrees",
    "bayes",
    "abtest",
    "lhs",
    "tpe",
    "gridsearch",
    "traverse",
    "ppo",
    "Bayesian_Transfer",
)
#: The engines of A-Tune's parameter-selection stage, and its two ways to rank parameters.
FILTER_ENGINES = ("random", "abtest", "lhs", "traverse")
SELECTORS = ("wefs", "vrfs")
#: Device placeholders A-Tune fills from its daemon's config; hone detects them.
DEVICE_PLACEHOLDERS = {"{disk}": "${HONE_DISK}", "{network}": "${HONE_NETWORK}"}


def is_server(data: Any) -> bool:
    return isinstance(data, dict) and "object" in data


def is_client(data: Any) -> bool:
    return isinstance(data, dict) and "evaluations" in data


def load_pair(server_path: Path, client_path: Path) -> Project:
    name, knobs, workload, max_iterations = load_server(server_path)
    client_name, metrics, tuning, command = load_client(client_path, max_iterations)
    if client_name != name:
        raise HoneError(
            f"names project {client_name!r} but the server file names {name!r}",
            file=client_path,
            line=1,
            key="project",
        )
    return Project(
        name=name,
        knobs=knobs,
        benchmark=Benchmark(command=command),
        metrics=metrics,
        directory=_working_directory(client_path),
        sources=[server_path, client_path],
        workload=workload,
        tuning=tuning,
    )


def _working_directory(path: Path) -> Path:
    """A-Tune's commands name files relative to the folder above the project's folder."""
    return path.resolve().parent.parent


def load_server(path: Path) -> tuple[str, list[Knob], Workload, int | None]:
    """The knobs half: project name, knobs, start/stop commands and the iteration cap."""
    server = _document(path, "server", is_server, "object")
    check_keys(server, SERVER_KEYS, required=("project", "object"))
    directory = _working_directory(path)
    env = device_environment()
    knobs = []
    for i, item in enumerate(_objects(server)):
        knob = _knob(item, i, server, directory, env)
        if any(k.name == knob.name for k in knobs):  # the second would never be set
            raise item.error("name", f"knob {knob.name!r} is named twice")
        knobs.append(knob)
    max_iterations = number(server, "maxiterations", None, integer=True)
    if max_iterations is not None and max_iterations <= 0:
        raise server.error("maxiterations", "must be at least 1")
    workload = Workload(
        start=text(server, "startworkload") or None, stop=text(server, "stopworkload") or None
    )
    return _project_name(server), knobs, workload, max_iterations


def load_client(
    path: Path, max_iterations: int | None = None
) -> tuple[str, list[Metric], Tuning, str]:
    """The goal half: project name, evaluations, engine settings and the benchmark command."""
    client = _document(path, "client", is_client, "evaluations")
    check_keys(client, CLIENT_KEYS, required=("project", "benchmark", "evaluations"))
    iterations = number(client, "iterations", 30, integer=True, low=1)
    if iterations <= 0:
        raise client.error("iterations", "must be at least 1")
    tuning = _tuning(client, min(iterations, max_iterations or iterations))
    return _project_name(client), _metrics(client), tuning, _required_text(client, "benchmark")


def _document(path: Path, role: str, test: Any, key: str) -> Node:
    data = load_yaml(path)
    if not test(data):
        raise HoneError(f"not an A-Tune {role} file (no {key!r} list)", file=path)
    return data


def _project_name(node: Node) -> str:
    name = _required_text(node, "project")
    if not 1 <= len(name) <= 128:
        raise node.error("project", "must be 1 to 128 characters")
    return refuse_control(node, "project", name, "project name")


def _required_text(node: Node, key: str) -> str:
    value = text(node, key)
    if not value:
        raise node.error(key, "is missing or empty")
    return value


def _objects(server: Node) -> list[Node]:
    items = server["object"]
    if not isinstance(items, list) or not items:
        raise server.error("object", "must be a non-empty list of knobs")
    return items


def _knob(item: Any, index: int, server: Node, directory: Path, env: dict[str, str]) -> Knob:
    if not isinstance(item, Node):
        raise server.error("object", f"entry {index + 1} must be a mapping with name and info")
    check_keys(item, ("name", "info"), required=("name", "info"))
    name = refuse_control(item, "name", _required_text(item, "name"), "knob name")
    info = expect_mapping(item["info"], item, "info")
    check_keys(info, INFO_KEYS, required=("set", "type"))
    try:
        domain = _domain(info)
    except ValueError as exc:
        raise info.error("scope", f"knob {name!r}: {exc}") from None
    actuator = ShellActuator(
        set_command=render(_required_text(info, "set"), DEVICE_PLACEHOLDERS),
        get_command=render(text(info, "get") or "", DEVICE_PLACEHOLDERS) or None,
        cwd=str(directory),
        env=dict(env),
    )
    check_declared_values(info, "set", name, actuator, domain)
    reference = None
    if info.get("ref") is not None:
        try:
            reference = domain.parse(text(info, "ref") or "")
        except ValueError as exc:
            raise info.error("ref", f"knob {name!r}: {exc}") from None
        if not domain.contains(reference):  # it would be the baseline every trial is set from
            raise info.error("ref", f"knob {name!r}: {info['ref']!r} is not in {domain.describe()}")
    return Knob(
        name=name,
        domain=domain,
        actuator=actuator,
        restart=boolean(info, "needrestart", False),
        reference=reference,
        description=text(info, "desc") or "",
        risk=catalogued([name]),  # A-Tune's format has no risk: the catalogue's, by name
        source=(info.file, info.line_of(said := "get" if "get" in info else "set"), said),
    )


def _domain(info: Node) -> Domain:
    kind = text(info, "type")
    dtype = (text(info, "dtype") or ("string" if "options" in info else "int")).lower()
    if kind not in ("discrete", "continuous"):
        raise info.error("type", f"must be discrete or continuous, not {kind!r}")
    if dtype not in ("int", "float", "string"):
        raise info.error("dtype", f"must be int, float or string, not {dtype!r}")
    if dtype == "string" or (kind == "discrete" and "options" in info and "scope" not in info):
        options = info.get("options")
        if not isinstance(options, list) or not options:
            raise info.error("options", "a string knob needs a non-empty options list")
        if dtype == "string":
            said = words(info, "options", options)
            return Categorical(
                tuple(refuse_control(info, "options", v, "option", True) for v in said)
            )
        return Ordinal(tuple(_numbers(info, "options", options, dtype)))
    scope = info.get("scope")
    if not isinstance(scope, list) or len(scope) < 2:
        raise info.error("scope", "must be a list [low, high] (pairs of ranges when discrete)")
    bounds = _numbers(info, "scope", scope, dtype)
    if kind == "continuous":
        low, high = bounds[0], bounds[1]
        if dtype == "int":
            return IntRange(int(low), int(high))
        return FloatRange(float(low), float(high))
    if len(bounds) % 2:
        raise info.error("scope", "a discrete scope must hold pairs [low, high, low, high, ...]")
    return _discrete(info, bounds, dtype)


#: A discrete scope of more values is a typo (or an attack): listing them would take minutes.
MAX_VALUES = 100_000


def _discrete(info: Node, bounds: list[float], dtype: str) -> Domain:
    """Union of stepped ranges plus `items`; a single range without items stays a range."""
    raw_step = number(info, "step", None)
    extra = _numbers(info, "items", info.get("items") or [], dtype)
    if dtype == "int":
        step = max(1, int(raw_step or 1))
        if len(bounds) == 2 and not extra:
            low, high = int(bounds[0]), int(bounds[1])
            return IntRange(low, low + (high - low) // step * step, step)
    else:
        step = raw_step if raw_step and raw_step > 0 else 0.1
        if len(bounds) == 2 and not extra:
            return FloatRange(float(bounds[0]), float(bounds[1]), step=step)
    count = sum(int((hi - lo) / step) + 1 for lo, hi in _pairs(bounds))
    if count > MAX_VALUES:
        raise info.error("scope", f"lists {count:,} values; at most {MAX_VALUES:,}")
    if dtype == "int":
        values = {v for lo, hi in _pairs(bounds) for v in range(int(lo), int(hi) + 1, step)}
    else:
        values = set()
        for lo, hi in _pairs(bounds):
            count = int((hi - lo) / step + 1e-9)
            values.update(round(lo + i * step, 12) for i in range(count + 1))
    values.update(extra)
    if not values:
        raise info.error("scope", "describes no values")
    return Ordinal(tuple(values))


def _pairs(bounds: list[float]) -> list[tuple[float, float]]:
    return [(bounds[i], bounds[i + 1]) for i in range(0, len(bounds), 2)]


def _numbers(info: Node, key: str, values: Any, dtype: str) -> list[Any]:
    if not isinstance(values, list):
        raise info.error(key, "must be a list")
    result = []
    for value in values:
        try:
            number_ = float(str(value).strip())
        except ValueError:
            raise info.error(key, f"{value!r} is not a number") from None
        if not (math.isfinite(number_) and abs(number_) <= LIMIT):
            raise info.error(key, f"{value!r} is not a finite number within +-{LIMIT:g}")
        if dtype == "int":
            if number_ != int(number_):
                raise info.error(key, f"{value!r} is not an integer")
            # Parse integers from text, not through float, so byte counts stay exact.
            text_value = str(value).strip()
            result.append(int(text_value) if text_value.lstrip("-").isdigit() else int(number_))
        else:
            result.append(number_)
    return result


def _metrics(client: Node) -> list[Metric]:
    evaluations = client["evaluations"]
    if not isinstance(evaluations, list) or not evaluations:
        raise client.error("evaluations", "must be a non-empty list")
    if len(evaluations) > 10:
        raise client.error("evaluations", "at most 10 evaluations")
    metrics = []
    for index, item in enumerate(evaluations):
        if not isinstance(item, Node):
            raise client.error("evaluations", f"entry {index + 1} must be a mapping")
        check_keys(item, ("name", "info"), required=("name", "info"))
        info = expect_mapping(item["info"], item, "info")
        check_keys(info, ("get", "type", "weight", "threshold"), required=("get", "type"))
        kind = text(info, "type")
        if kind not in ("negative", "positive"):
            raise info.error(
                "type", f"must be negative (maximise) or positive (minimise), not {kind!r}"
            )
        name = refuse_control(item, "name", _required_text(item, "name"), "metric name")
        check_output_command(info, "get", name, text(info, "get"))
        number(info, "threshold", None, low=-LIMIT, high=LIMIT)  # only with relations, unused
        metrics.append(
            Metric(
                name=_required_text(item, "name"),
                direction="maximize" if kind == "negative" else "minimize",
                command=_required_text(info, "get"),
                weight=number(info, "weight", 100.0, low=0),
            )
        )
    return metrics


def _choice(node: Node, key: str, known: tuple[str, ...]) -> str | None:
    """A word from A-Tune's fixed list (or nothing): a typo there is refused, not ignored."""
    value = text(node, key)
    if value is not None and value not in known:
        raise node.error(key, f"must be one of {', '.join(known)}, not {value!r}")
    return value


def _tuning(client: Node, budget: int) -> Tuning:
    engine = text(client, "engine") or "auto"
    if engine.lower() not in {e.lower() for e in ENGINES}:
        known = ", ".join(ENGINES)
        raise client.error("engine", f"unknown engine {engine!r} (known: {known})")
    random_starts = number(client, "random_starts", None, integer=True)
    # read for their meaning only: hone ranks knobs its own way and measures the noise
    _choice(client, "feature_selector", SELECTORS)
    number(client, "eval_fluctuation", None, low=0)
    feature = None
    if client.get("feature_filter_engine"):
        feature = FeatureFilter(
            engine=_choice(client, "feature_filter_engine", FILTER_ENGINES) or "lhs",
            cycle=number(client, "feature_filter_cycle", 0, integer=True),
            iterations=number(client, "feature_filter_iters", 0, integer=True),
            count=number(client, "feature_filter_count", 0, integer=True),
        )
    return Tuning(
        engine=engine,
        budget=budget,
        random_starts=random_starts if random_starts else None,
        split_count=number(client, "split_count", None, integer=True),
        objective="atune",
        feature_filter=feature,
    )
