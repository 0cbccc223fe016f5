"""hone's own project format: typed knobs, constraints, metrics with limits, clear errors."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from hone.errors import HoneError
from hone.project import load_project
from hone.project.convert import to_hone_yaml
from hone.project.model import Project
from hone.project.yamlio import CoreSafeLoader, dump_with_header
from hone.space import Boolean, Categorical, Constraint, FloatRange, IntRange, Ordinal

GOOD = """\
name: demo
workload:
  start: "true"
  stop: "true"
knobs:
  threads: {type: int, range: [1, 16], shell: {get: "echo 4", set: "true"}, default: 4}
  ratio: {type: float, range: [0.01, 10], log: true, shell: {get: "echo 1", set: "true"}}
  size: {type: ordinal, values: [64, 128, 1024], shell: {get: "echo 128", set: "true"}}
  mode: {type: categorical, values: [a, b], shell: {get: "echo a", set: "true"}, restart: true}
  fast: {type: bool, shell: {get: "echo 1", set: "true"}}
  swappiness: {type: int, range: [0, 100], sysctl: vm.swappiness}
constraints:
  - "size >= threads * 8"
benchmark: {command: "echo tps 5", timeout: 10, repeats: 2}
metrics:
  tps: {pattern: 'tps (\\d+)', direction: maximize}
  p99: {pattern: 'p99 (\\d+)', direction: minimize, weight: 0, limit: "<= 5"}
tuning: {budget: 7, baseline: 2, apply: never, confirm: {candidates: 1, rounds: 2}}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "hone.yaml"
    path.write_text(text)
    return path


def test_good_project_loads_every_kind_of_knob(tmp_path: Path) -> None:
    project = load_project(write(tmp_path, GOOD))
    domains = {k.name: k.domain for k in project.knobs}
    assert domains["threads"] == IntRange(1, 16)
    assert isinstance(domains["ratio"], FloatRange) and domains["ratio"].log
    assert domains["size"] == Ordinal((64, 128, 1024))
    assert domains["mode"] == Categorical(("a", "b"))
    assert isinstance(domains["fast"], Boolean)
    assert project.knob("mode").restart and not project.knob("threads").restart
    assert project.knob("swappiness").actuator.spec() == {"kind": "sysctl", "key": "vm.swappiness"}
    space = project.space()
    assert space.feasible(
        {
            **space.defaults,
            "threads": 4,
            "ratio": 1.0,
            "size": 128,
            "mode": "a",
            "fast": True,
            "swappiness": 10,
        }
    )
    assert not space.feasible(
        {"threads": 16, "ratio": 1.0, "size": 64, "mode": "a", "fast": True, "swappiness": 10}
    )
    assert project.benchmark.repeats == 2 and project.tuning.budget == 7
    assert str(project.metrics[1].limit) == "<= 5"


def test_on_off_yes_no_are_values_where_values_are_meant(tmp_path: Path) -> None:
    """YAML 1.1 read on/off/yes/no as booleans: `values: [on, off]` became True/False and hone
    would have written `sendfile True` into a config file. They stay the words written, and
    settings that are flags still take them as true and false."""
    text = GOOD.replace("values: [a, b]", "values: [on, off, auto]").replace(
        'shell: {get: "echo a", set: "true"}, restart: true}',
        'shell: {get: "echo a", set: "true"}, restart: yes, default: off}',
    )
    text = text.replace("fast: {type: bool,", "fast: {type: bool, on: yes, off: no,")
    project = load_project(write(tmp_path, text))
    assert project.knob("mode").domain == Categorical(("on", "off", "auto"))
    assert project.space().defaults["mode"] == "off" and project.knob("mode").restart
    fast = project.knob("fast").domain
    assert isinstance(fast, Boolean) and (fast.format(True), fast.format(False)) == ("yes", "no")


def test_numbers_are_yaml_1_2s_and_text_written_back_reads_the_same(tmp_path: Path) -> None:
    """YAML 1.1 read `1e3` as text (so `range: [1e3, 1e6]` was "not a number") and `1:30` as
    ninety (`010`, eight there and ten in YAML 1.2, is refused: another case); a file hone
    writes must read back as the same values, here and in YAML 1.1 readers such as A-Tune's."""
    text = (
        GOOD.replace("range: [0.01, 10]", "range: [1e-2, 1e1]")
        .replace("values: [a, b]", "values: [1:30, 2024-01-01, '1e3']")
        .replace('get: "echo a"', 'get: "echo 1:30"')
        .replace("range: [1, 16]", "range: [01, 0x10]")
    )
    project = load_project(write(tmp_path, text))
    assert project.knob("ratio").domain == FloatRange(0.01, 10.0, log=True)
    assert project.knob("mode").domain == Categorical(("1:30", "2024-01-01", "1e3"))
    assert project.knob("threads").domain == IntRange(1, 16)
    data = {"values": ["1e3", "010", "on", ".5", "0x1F", 1e3, 10, True, "true", None]}
    written = dump_with_header(["# a file hone writes"], data)
    assert yaml.load(written, Loader=CoreSafeLoader) == data == yaml.safe_load(written)


def test_values_read_from_the_system_are_references_only_inside_the_space(tmp_path: Path) -> None:
    """The values a run reads before tuning fill the references its knobs do not declare, but a
    value the knob's domain does not hold (swappiness 150 against 0-100) is none: the search
    would start from a point outside its own space. A declared reference stays as written."""
    project = load_project(write(tmp_path, GOOD))
    read = {"threads": 12, "ratio": 1.0, "size": 100, "mode": "a", "fast": True, "swappiness": 150}
    defaults = project.space(read).defaults
    assert defaults["threads"] == 4  # declared (default: 4), not the 12 read
    assert defaults["ratio"] == 1.0 and defaults["mode"] == "a" and defaults["fast"] is True
    assert "size" not in defaults and "swappiness" not in defaults  # not in the space
    assert project.space(read).default() is None  # so no baseline configuration from them


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (("budget: 7", "budgett: 7"), "did you mean 'budget'"),
        (("type: int, range: [1, 16]", "type: integer, range: [1, 16]"), "type must be"),
        (("range: [0, 100]", "range: [0, hundred]"), "not a number"),
        (("direction: maximize", "direction: up"), "must be maximize or minimize"),
        (('"size >= threads * 8"', '"size >= thread * 8"'), "unknown knob 'thread'"),
        (('limit: "<= 5"', 'limit: "about 5"'), "limit"),
        (("sysctl: vm.swappiness", "sysctl: vm.swappiness, sysfs: /sys/x"), "exactly one"),
        (("budget: 7", "budget: 7, engine: simulated-annealing"), "unknown engine"),
        (("sysctl: vm.swappiness", "sysctl: ../../etc/passwd"), "not under /proc/sys"),
        (("sysctl: vm.swappiness", "sysctl: ......etc.shadow"), "not under /proc/sys"),
        (("sysctl: vm.swappiness", "sysctl: /etc/passwd"), "not under /proc/sys"),
        (("sysctl: vm.swappiness", "sysctl: {key: ~}"), "key: is empty"),
        # int(nan) and int(inf) were a ValueError and an OverflowError traceback
        (("default: 4}", "default: .nan}"), "default: nan is not in int [1, 16]"),
        (("default: 4}", "default: -.inf}"), "default: -inf is not in int [1, 16]"),
        # a NUL byte in a path was a ValueError traceback (embedded null byte)
        (("sysctl: vm.swappiness", 'config: {file: "a\\0.conf", key: k}'), "file holds a NUL"),
        # a key that is there but empty was `missing required key` at the top of the file
        (('benchmark: {command: "echo tps 5"', 'benchmark: {command: ""'), "command: is empty"),
        (("sysctl: vm.swappiness", 'sysctl: "vm.swap piness"'), "not a sysctl name"),
        (("values: [a, b]", "values: [a, 0644]"), "420 in YAML 1.1 (A-Tune) and 644 in YAML 1.2"),
        (("values: [a, b]", "values: [a, 08]"), "quote it for the text ('08')"),
        # an int range of a fraction searched int()'s range, not the one given
        (("range: [1, 16], shell", "range: [1.5, 16], shell"), "1.5 is not a whole number"),
        # a step of 0 was named as `range`; a step wider than the range searched one value
        (("range: [1, 16], shell", "range: [1, 16], step: 0, shell"), "step: must be a whole"),
        (("range: [1, 16], shell", "range: [1, 16], step: 20, shell"), "step: knob 'threads': "
                                                        "step 20 is wider than the range [1, 16]"),
        (("range: [0.01, 10], log", "range: [0.01, 10], step: 0, log"), "step: knob 'ratio': "
                                                                "must be a number above 0, not 0"),
        (("range: [0.01, 10], log", "range: [0.01, 10], step: 11, log"), "step 11 is wider"),
        (("range: [0, 100]", "range: [true, 100]"), "range: true is not a number"),
        # constraints the search could not compute: each was a traceback at its first proposal
        # (a MemoryError for the string of 100 GB), after hone check had passed them
        (('"size >= threads * 8"', '"size << 2 > threads"'), "'<<' is not allowed"),
        (('"size >= threads * 8"', '"mode > 3"'), "'>' not supported between instances of"),
        (('"size >= threads * 8"', '"mode * 99999999999 == mode"'), "'a' is not a number"),
        (('"size >= threads * 8"', '"-mode == 1"'), "'a' is not a number"),
        (('"size >= threads * 8"', '"max() > 1"'), "max() takes 2 or more arguments"),
        (('"size >= threads * 8"', '"abs(size, 1) > 1"'), "abs() takes one argument"),
        (('"size >= threads * 8"', '"size > None"'), "'None' is not allowed"),
        # a control character in a name or a value reached every line that shows it, raw: an
        # escape that recoloured `hone studies | cat`, a line break that split a table row
        (("swappiness: {type", '"swap\\e[31mpiness": {type'), "knob name 'swap\\x1b[31mpiness' "
                                                                "holds a control character"),
        (("values: [a, b]", 'values: [a, "b\\e[0m"]'), "values: value 'b\\x1b[0m' holds a"),
        (("tps: {pattern", '"tps\\n": {pattern'), "metric name 'tps\\n' holds a control"),
    ],
)  # fmt: skip
def test_bad_input_names_file_line_and_key(
    tmp_path: Path, change: tuple[str, str], words: str
) -> None:
    assert change[0] in GOOD
    line = GOOD[: GOOD.index(change[0])].count("\n") + 1
    path = write(tmp_path, GOOD.replace(change[0], change[1], 1))
    with pytest.raises(HoneError) as info:
        load_project(path)
    message = str(info.value)
    assert message.startswith(f"{path}:{line}:"), message
    assert words in message


def test_constraints_no_configuration_satisfies_are_refused(tmp_path: Path) -> None:
    """`size > 5000` of values up to 1024 stopped the run at its first proposal with a
    traceback (`could not find a configuration that satisfies the constraints`)."""
    path = write(tmp_path, GOOD.replace('"size >= threads * 8"', '"size > 5000"'))
    line = GOOD[: GOOD.index("constraints:")].count("\n") + 1
    with pytest.raises(HoneError) as info:
        load_project(path)
    assert str(info.value).startswith(f"{path}:{line}: constraints: no configuration of 1000")


def test_a_constraint_is_false_where_it_divides_by_zero() -> None:
    """Not a ZeroDivisionError traceback in the middle of a run: such a configuration is not
    allowed, the others are."""
    constraint = Constraint.parse("size // (threads - 4) >= 8", {"size", "threads"})
    assert not constraint.holds({"size": 64, "threads": 4})
    assert constraint.holds({"size": 64, "threads": 8})


@pytest.mark.parametrize(
    "second",
    [
        "swap2: {type: int, range: [1, 60], sysctl: vm.swappiness}",
        "level: {type: int, range: [1, 9], config: {file: ./sub/../app.conf, key: level}}",
    ],
)
def test_two_knobs_that_set_one_thing_are_refused(tmp_path: Path, second: str) -> None:
    """They were loaded and tuned: the second's value overwrote the first's, and every trial
    recorded a value for the first that was never in effect."""
    (tmp_path / "app.conf").write_text("level=1\n")
    text = GOOD.replace(
        "  swappiness:",
        "  lvl: {type: int, range: [1, 9], config: {file: app.conf, key: level}}\n  swappiness:",
    ).replace("constraints:", f"  {second}\nconstraints:")
    path = write(tmp_path, text)
    line = text[: text.index(second)].count("\n") + 1
    with pytest.raises(HoneError) as info:
        load_project(path)
    assert str(info.value).startswith(f"{path}:{line}: ")
    assert "sets what knob" in str(info.value) and str(info.value).endswith(": keep one")


def test_an_atune_knob_with_another_ones_set_command_is_loaded_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A-Tune's kafka example sets buffer.memory from two knobs (a copy and paste): loaded, as
    A-Tune loads it, and named."""
    server = SERVER.format(name="p") + (
        "  - name: twin\n"
        '    info: {get: "echo 60", set: "true", type: discrete, dtype: int, scope: [1, 9]}\n'
    )
    (tmp_path / "s.yaml").write_text(server)
    (tmp_path / "c.yaml").write_text(CLIENT.format(name="p"))
    assert [k.name for k in load_project(tmp_path).knobs] == ["fin", "twin"]
    (warning,) = capsys.readouterr().err.splitlines()
    assert warning.startswith(f"hone: warning: {tmp_path / 's.yaml'}:6: knob 'twin' has the set")


def test_missing_benchmark_and_yaml_syntax(tmp_path: Path) -> None:
    text = "\n".join(line for line in GOOD.splitlines() if not line.startswith("benchmark"))
    with pytest.raises(HoneError, match="missing required key 'benchmark'"):
        load_project(write(tmp_path, text))
    with pytest.raises(HoneError, match=r"hone.yaml:\d: invalid YAML"):
        load_project(write(tmp_path, "name: x\nknobs:\n  a: [1, 2\n"))


def test_restart_knob_needs_a_workload(tmp_path: Path) -> None:
    text = GOOD.replace('workload:\n  start: "true"\n  stop: "true"\n', "")
    with pytest.raises(HoneError, match="needs a restart"):
        load_project(write(tmp_path, text))


CORPUS = Path(__file__).resolve().parents[3] / "shared" / "atune-corpus" / "examples"


def test_convert_round_trips_an_atune_pair(tmp_path: Path) -> None:
    original = load_project(CORPUS / "memcached")
    converted = tmp_path / "memcached.yaml"
    converted.write_text(to_hone_yaml(original, converted))
    again = load_project(converted)
    assert [k.name for k in again.knobs] == [k.name for k in original.knobs]
    assert [k.domain for k in again.knobs] == [k.domain for k in original.knobs]
    assert [k.restart for k in again.knobs] == [k.restart for k in original.knobs]
    assert again.benchmark.command == original.benchmark.command
    assert again.directory == original.directory
    assert again.tuning.engine == "gbrt" and again.tuning.objective == "atune"


SERVER = """\
project: "{name}"
object:
  - name: fin
    info: {{get: "echo 60", set: "true", type: discrete, dtype: float, scope: [20, 80], step: 100}}
"""
CLIENT = """\
project: "{name}"
benchmark: "echo score 1"
evaluations:
  - {{name: score, info: {{get: "echo 1", type: positive, weight: 100}}}}
"""


@pytest.mark.parametrize("name", ["my project", "spark_hibench_{program}", "/"])
def test_a_converted_pair_loads_whatever_its_names_and_steps(tmp_path: Path, name: str) -> None:
    """A-Tune takes any project name and a step wider than the range; the file convert wrote
    of them was one hone refused (`name: must be 1-128 letters, ...`, `step ... is wider`)."""
    (tmp_path / "s.yaml").write_text(SERVER.format(name=name))
    (tmp_path / "c.yaml").write_text(CLIENT.format(name=name))
    original = load_project(tmp_path)
    assert original.name == name
    converted = tmp_path / "hone.yaml"
    converted.write_text(to_hone_yaml(original, converted))
    again = load_project(converted)
    domain = again.knob("fin").domain
    assert again.name != name and (domain.low, domain.high) == (20, 20)  # A-Tune's one value
    assert converted.read_text().startswith(f'# A-Tune\'s project name "{name}" spelt as')
    other = replace(original, name=name + " ")  # another name, another spelling
    assert to_hone_yaml(other).splitlines()[1] != converted.read_text().splitlines()[1]


@pytest.mark.parametrize(("part", "old", "new"), [
    ("server", 'project: "{name}"', 'project: "ev\\e[31mil"'),
    ("server", "- name: fin", '- name: "f\\rin"'),
    ("server", "dtype: float, scope: [20, 80], step: 100",
     'dtype: string, options: [a, "b\\e[0m"]'),
    ("client", "{{name: score,", '{{name: "sc\\nore",'),
])  # fmt: skip
def test_an_atune_name_or_option_with_a_control_character_is_refused(
    tmp_path: Path, part: str, old: str, new: str
) -> None:
    texts = {"server": SERVER, "client": CLIENT}
    assert old in texts[part]
    texts[part] = texts[part].replace(old, new)
    if "ev" in new:
        texts["client"] = texts["client"].replace('"{name}"', '"ev\\e[31mil"')
    (tmp_path / "s.yaml").write_text(texts["server"].format(name="p"))
    (tmp_path / "c.yaml").write_text(texts["client"].format(name="p"))
    with pytest.raises(HoneError, match="holds a control character") as info:
        load_project(tmp_path)
    assert "\x1b" not in str(info.value) and "\n" not in str(info.value)


def _selection(project: Project) -> tuple[int, int] | None:
    """The trials before the knob selection and the knobs it keeps (all hone uses of it)."""
    select = project.tuning.feature_filter
    return (select.iterations, select.count) if select else None


def _loads(folder: Path) -> bool:
    try:
        load_project(folder)
    except HoneError:
        return False
    return True


@pytest.mark.parametrize(
    "folder",
    [f for f in sorted({p.parent for p in CORPUS.rglob("*.yaml")}) if _loads(f)],
    ids=lambda f: str(f.relative_to(CORPUS)),
)
def test_every_corpus_project_converts_to_a_file_that_loads(tmp_path: Path, folder: Path) -> None:
    """mariadb_distributed steps a byte size by 1 GiB: the converted file must keep it."""
    original = load_project(folder)
    converted = tmp_path / "hone.yaml"
    converted.write_text(to_hone_yaml(original, converted))
    again = load_project(converted)
    assert [(k.name, k.domain, k.restart) for k in again.knobs] == [
        (k.name, k.domain, k.restart) for k in original.knobs
    ]
    assert [(m.name, m.direction, m.weight) for m in again.metrics] == [
        (m.name, m.direction, m.weight) for m in original.metrics
    ]
    assert [(k.reference, k.actuator.spec()) for k in again.knobs] == [
        (k.reference, k.actuator.spec()) for k in original.knobs
    ]
    assert (again.workload, again.benchmark) == (original.workload, original.benchmark)
    # what the search does: engine, budget, starts, grid, objective and the knob selection
    assert replace(again.tuning, feature_filter=None) == replace(
        original.tuning, feature_filter=None
    )
    assert _selection(again) == _selection(original)
