"""Property-based fuzzing of what a user or an attacker can hand hone: projects (both formats),
profiles and journals with a field replaced by junk, and files that are not text. Each must load
or end in one HoneError line; nothing else escapes, and nothing on the system changes.

The draws are derandomized (the same inputs every run) and bounded, so CI stays quick."""

from __future__ import annotations

import io
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from hone.errors import HoneError
from hone.journal import Journal
from hone.profiles.library import ProfileLibrary
from hone.project import load_project
from hone.tune.check import check_project

FUZZ = settings(
    max_examples=int(os.environ.get("HONE_FUZZ_EXAMPLES", "250")),
    deadline=None,
    derandomize=not os.environ.get("HONE_FUZZ_EXAMPLES"),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "-1", "1e20", ".nan", "-.inf", "$(id)", "a\nb", "../../etc/passwd"]),
    st.text(max_size=20),
    st.lists(st.one_of(st.integers(), st.text(max_size=5)), max_size=4),
    st.dictionaries(st.text(max_size=6), st.one_of(st.integers(), st.text(max_size=6)), max_size=3),
)

HONE_PROJECT: dict[str, Any] = {
    "name": "fuzz",
    "knobs": {
        "threads": {
            "type": "int",
            "range": [1, 8],
            "step": 1,
            "default": 2,
            "config": {"file": "app.conf", "key": "threads"},
        },
        "mode": {
            "type": "categorical",
            "values": ["a", "b"],
            "shell": {"get": "cat mode.txt", "set": 'echo "$value" > mode.txt', "timeout": 5},
        },
        "ratio": {
            "type": "float",
            "range": [0.1, 2.0],
            "log": True,
            "sysfs": "/sys/kernel/mm/transparent_hugepage/khugepaged/pages_to_scan",
        },
        "size": {"type": "ordinal", "values": [64, 128, 256], "sysctl": "vm.swappiness"},
    },
    "constraints": ["threads * 2 <= size"],
    "benchmark": {"command": "python3 bench.py", "timeout": 30, "repeats": 1},
    "metrics": {"tps": {"pattern": "tps: (\\S+)", "direction": "maximize", "limit": "> 0"}},
    "tuning": {
        "engine": "auto",
        "budget": 10,
        "baseline": 3,
        "seed": 1,
        "confirm": {"candidates": 2, "rounds": 3},
    },
}

ATUNE_SERVER: dict[str, Any] = {
    "project": "fuzz",
    "maxiterations": 10,
    "startworkload": "",
    "object": [
        {
            "name": "opt",
            "info": {
                "desc": "d",
                "get": "cat f",
                "set": "echo $value > f",
                "needrestart": "false",
                "type": "discrete",
                "dtype": "string",
                "options": ["a", "b"],
            },
        },
        {
            "name": "n",
            "info": {
                "desc": "d",
                "get": "cat g",
                "set": "echo $value > g",
                "needrestart": "false",
                "type": "continuous",
                "dtype": "int",
                "scope": [1, 10],
                "step": 1,
            },
        },
    ],
}
ATUNE_CLIENT: dict[str, Any] = {
    "project": "fuzz",
    "engine": "bayes",
    "iterations": 5,
    "benchmark": "sh bench.sh",
    "evaluations": [
        {"name": "t", "info": {"get": "echo '$out' | tail -1", "type": "positive", "weight": 100}}
    ],
}


def _paths(node: Any, prefix: tuple = ()) -> Iterator[tuple]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield (*prefix, key)
            yield from _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield (*prefix, index)
            yield from _paths(value, (*prefix, index))


def _replaced(doc: Any, path: tuple, junk: Any) -> Any:
    doc = json.loads(json.dumps(doc))
    node = doc
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = junk
    return doc


def _one_line(exc: HoneError) -> None:
    text = str(exc)
    assert text and "\n" not in text.strip() and "Traceback" not in text, text


def _check(folder: Path) -> None:
    """What `hone check` does: load, build the space, print the knobs (output discarded)."""
    try:
        with redirect_stdout(io.StringIO()):
            check_project(Console(file=io.StringIO()), str(folder), None, None)
    except HoneError as exc:
        _one_line(exc)


@FUZZ
@given(path=st.sampled_from(list(_paths(HONE_PROJECT))), junk=JUNK)
def test_bad_hone_projects_end_in_one_line(path: tuple, junk: Any) -> None:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "hone.yaml").write_text(yaml.safe_dump(_replaced(HONE_PROJECT, path, junk)))
        _check(Path(folder))


@FUZZ
@given(
    which=st.sampled_from(["server", "client"]),
    data=st.data(),
    junk=JUNK,
)
def test_bad_atune_pairs_end_in_one_line(which: str, data: st.DataObject, junk: Any) -> None:
    doc = ATUNE_SERVER if which == "server" else ATUNE_CLIENT
    path = data.draw(st.sampled_from(list(_paths(doc))))
    server = _replaced(doc, path, junk) if which == "server" else ATUNE_SERVER
    client = _replaced(doc, path, junk) if which == "client" else ATUNE_CLIENT
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "fuzz_server.yaml").write_text(yaml.safe_dump(server))
        (Path(folder) / "fuzz_client.yaml").write_text(yaml.safe_dump(client))
        _check(Path(folder))


@FUZZ
@given(
    content=st.one_of(
        st.binary(max_size=200),
        st.sampled_from(
            [
                "name: x\n".encode("utf-16"),
                "name: caf\xe9\n".encode("latin-1"),
                b"\x00\x01\x02",
                b"a: " + b"[" * 5000,
                b"\xef\xbb\xbfname: x\n",
                b'a: &a ["x","x"]\nb: &b [*a,*a]\nc: &c [*b,*b]\nd: [*c,*c]\n',
            ]
        ),
    )
)
def test_files_that_are_not_projects_end_in_one_line(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "hone.yaml").write_bytes(content)
        _check(Path(folder))


@FUZZ
@given(
    lines=st.lists(
        st.one_of(
            st.just("null"),
            st.just("[]"),
            st.just("{}"),
            st.just('{"op": "original"}'),
            st.just('{"op": "original", "name": "k", "spec": {"kind": "nosuch"}, "value": "1"}'),
            st.just(
                '{"op": "original", "name": "k", "spec": {"kind": "sysctl", "key": 5}, "value": 1}'
            ),
            st.just('{"op": "begin", "pid": 1}'),
            st.just('{"op": "end", "outcome": "x"}'),
            st.text(max_size=30).map(lambda t: t.replace("\n", " ")),
            st.binary(max_size=10).map(lambda b: b.decode("latin-1")),
        ),
        max_size=6,
    )
)
def test_corrupt_journals_end_in_one_line_and_change_nothing(lines: list[str]) -> None:
    with tempfile.TemporaryDirectory() as home:
        journal = Journal(Path(home) / "j.jsonl")
        journal.path.write_bytes("\n".join(lines).encode("utf-8", "surrogateescape"))
        before = journal.path.read_bytes()
        try:
            journal.originals()
            journal.unfinished()
        except HoneError as exc:
            _one_line(exc)
            assert journal.path.read_bytes() == before


@FUZZ
@given(
    text=st.one_of(
        st.text(max_size=200),
        st.lists(
            st.sampled_from(
                [
                    "[main]",
                    "include = x",
                    "include = fuzz",
                    "[sysctl]",
                    "vm.swappiness = 10",
                    "vm.swappiness = $(id)",
                    "[sysfs]",
                    "/etc/passwd = 1",
                    "[bootloader.grub2]",
                    "[script]",
                    "x = ../../bin/sh",
                    "= 5",
                    "[sysctl",
                    "\ufeff[main]",
                    "key",
                ]
            ),
            max_size=10,
        ).map("\n".join),
    )
)
def test_bad_profiles_end_in_one_line(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "fuzz.conf").write_text(text, errors="surrogateescape")
        try:
            ProfileLibrary([Path(folder)]).load("fuzz")
        except HoneError as exc:
            _one_line(exc)


def _with(path: tuple, value: Any) -> dict[str, Any]:
    return _replaced(HONE_PROJECT, path, value)


REFUSED_AT_CHECK = {
    "a NaN range": _with(("knobs", "ratio", "range"), [float("nan"), 1.0]),
    "an infinite range": _with(("knobs", "threads", "range"), [1, float("inf")]),
    "a huge integer": _with(("knobs", "threads", "range"), [1, 10**30]),
    "a negative timeout": _with(("benchmark", "timeout"), -5),
    "repeats 1e20": _with(("benchmark", "repeats"), 1e20),
    "a negative budget": _with(("tuning", "budget"), -3),
    "a negative seed": _with(("tuning", "seed"), -1),
    "sysfs outside /sys": _with(("knobs", "ratio", "sysfs"), "/etc/passwd"),
    "sysfs path not text": _with(("knobs", "ratio", "sysfs"), {"path": 5}),
    # Values that would reach the system as Python prints them ("['threads']", "None"):
    "a list as a config key": _with(("knobs", "threads", "config", "key"), ["threads"]),
    "a list as an INI section": _with(
        ("knobs", "threads", "config"),
        {"file": "app.conf", "format": "ini", "section": ["main"], "key": "threads"},
    ),
    "a null config file": _with(("knobs", "threads", "config", "file"), None),
    "a misspelt config option": _with(
        ("knobs", "threads", "config"), {"file": "app.conf", "kye": "threads"}
    ),
    "a list as a sysctl": _with(("knobs", "size", "sysctl"), ["vm.swappiness"]),
    "a null sysctl": _with(("knobs", "size", "sysctl"), None),
    "a list as a unit": _with(
        ("knobs", "size"), {"type": "int", "range": [1, 2], "systemctl": {"unit": ["a"]}}
    ),
    "a list among the values": _with(("knobs", "mode", "values"), [["a"], "b"]),
    "a null among the values": _with(("knobs", "mode", "values"), [None, "b"]),
    "a mapping as a bool's word": _with(
        ("knobs", "mode"), {"type": "bool", "on": {"x": 1}, "sysctl": "vm.swappiness"}
    ),
}


def test_what_would_fail_or_hang_later_is_refused_at_check(tmp_path: Path) -> None:
    for what, doc in REFUSED_AT_CHECK.items():
        (tmp_path / "hone.yaml").write_text(yaml.safe_dump(doc))
        try:
            with redirect_stdout(io.StringIO()):
                check_project(Console(file=io.StringIO()), str(tmp_path), None, None)
        except HoneError as exc:
            assert "hone.yaml:" in str(exc), (what, str(exc))
        else:
            raise AssertionError(f"{what} was accepted")


def test_a_wrong_shape_is_named_in_yaml_words(tmp_path: Path) -> None:
    """`metrics: [tps]` said "must be a mapping, not NodeList", `tps:` with nothing under it
    "not NoneType": Python's class names, not the file's."""
    for value, shape in ((["tps"], "a list"), (None, "nothing"), (5, "a number")):
        (tmp_path / "hone.yaml").write_text(yaml.safe_dump(_with(("metrics", "tps"), value)))
        try:
            load_project(tmp_path)
        except HoneError as exc:
            assert str(exc).endswith(f"tps: must be a mapping (key: value lines), not {shape}")
        else:
            raise AssertionError(f"metric tps: {value!r} was accepted")


def test_flags_and_values_are_the_words_written(tmp_path: Path) -> None:
    """`restart: no` in a config knob's options is no restart (the word "no" was true), and a
    YAML boolean among a knob's values is written as `true`, not Python's `True`."""
    doc = _with(("knobs", "threads", "config", "restart"), "no")
    doc["workload"] = {"start": "true", "stop": "true"}
    doc["knobs"]["mode"]["values"] = [True, False]
    doc["knobs"]["mode"]["default"] = True
    (tmp_path / "hone.yaml").write_text(yaml.safe_dump(doc))
    project = load_project(tmp_path)
    assert not project.knob("threads").restart
    assert list(project.knob("mode").domain.values()) == ["true", "false"]
    assert project.knob("mode").reference == "true"


def test_a_knob_that_cannot_be_read_needs_a_default(tmp_path: Path) -> None:
    """A flag of a process hone starts, absent from its command line: no value to go back to."""
    doc = {
        "name": "flag",
        "knobs": {"threads": {"type": "int", "range": [1, 8], "flag": "--threads"}},
        "workload": {"process": {"command": ["sleep", "100"]}},
        "benchmark": {"command": "echo 'x 1'"},
        "metrics": {"x": {"pattern": "x (\\S+)", "direction": "maximize"}},
    }
    (tmp_path / "hone.yaml").write_text(yaml.safe_dump(doc))
    try:
        check_project(Console(file=io.StringIO()), str(tmp_path), None, None)
    except HoneError as exc:
        assert "cannot be read; give it a default" in str(exc) and "hone.yaml:" in str(exc)
    else:
        raise AssertionError("a flag knob with no default was accepted")


def test_a_power_constraint_cannot_hang_a_run() -> None:
    from hone.space.constraints import Constraint

    assert Constraint.parse("threads ** 99999999 > 3", {"threads"}).holds({"threads": 7})


def test_an_atune_knob_named_twice_is_refused(tmp_path: Path) -> None:
    server = json.loads(json.dumps(ATUNE_SERVER))
    server["object"][1]["name"] = "opt"
    (tmp_path / "fuzz_server.yaml").write_text(yaml.safe_dump(server))
    (tmp_path / "fuzz_client.yaml").write_text(yaml.safe_dump(ATUNE_CLIENT))
    try:
        check_project(Console(file=io.StringIO()), str(tmp_path), None, None)
    except HoneError as exc:
        assert "named twice" in str(exc) and "fuzz_server.yaml:" in str(exc)
    else:
        raise AssertionError("a duplicate knob name was accepted")
