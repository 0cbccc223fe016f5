"""A YAML boolean written where hone gives text to the system reaches it as `true` or `false`,
as the user wrote it, never as Python's `True`: a knob's values and default written into a
config file, a flag and an environment variable of a launched process, that process's own
arguments and variables, the workload's and a host group's commands (`ready: true` is the
shell's `true`; `True` is no command), a knob's risky values, and A-Tune's options and `ref`.
Commands used to be spelled by another function than values, and came out as `True`."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import yaml

from hone.project import load_project

RECORDER = """\
import json, os, sys, time
with open(os.path.join(os.environ["HONE_WORKDIR"], "seen"), "a") as out:
    out.write(json.dumps({"argv": sys.argv[1:], "mode": os.environ.get("MODE"),
                          "own": os.environ.get("OWN")}) + "\\n")
open(os.path.join(os.environ["HONE_WORKDIR"], "up"), "w").close()
time.sleep(600)
"""


def test_a_launched_process_and_its_commands_get_true_as_written(
    hone_cli, hone_home: Path, tmp_path: Path
) -> None:
    """Flag and env knobs, the process's own argument and variable, and `setup` and `ready`
    commands that are the shell's `true` (as `True` the run could not start)."""
    (tmp_path / "recorder.py").write_text(RECORDER)
    (tmp_path / "hone.yaml").write_text(
        textwrap.dedent("""\
        name: yaml-booleans
        workload:
          setup: true
          process:
            command: [python3, recorder.py, true]
            env: {OWN: false}
            stop_signal: KILL
          ready: true
        knobs:
          verbose:
            type: categorical
            values: [true, false]
            default: true
            flag: --verbose
            flag_style: equals
          mode:
            type: categorical
            values: [true, false]
            default: false
            env: MODE
        benchmark:
          command: >-
            for i in $(seq 150); do [ -e "$HONE_WORKDIR/up" ] && break; sleep 0.02; done;
            rm -f "$HONE_WORKDIR/up"; echo "ops 1"
          warmup: false
        metrics: {ops: {pattern: 'ops ([0-9]+)', direction: maximize}}
        tuning: {engine: gridsearch, budget: 4, baseline: 1, apply: never,
                 confirm: {candidates: 1, rounds: 1}}
        """)
    )
    # the benchmark waits for the process it reads to have recorded what it got, but at most
    # 3 s: a reading measured again on a busy machine (hone repeats a disturbed reading) runs
    # on the same process, which records nothing new
    run = hone_cli("tune", str(tmp_path), "--no-why", "--max-repeats", "2")
    assert run.returncode == 0, run.stderr
    lines = (hone_home / "work" / "yaml-booleans" / "seen").read_text().splitlines()
    seen = [json.loads(line) for line in lines]
    assert {s["argv"][0] for s in seen} == {"true"}  # the process's own argument
    assert {s["own"] for s in seen} == {"false"}  # its own variable
    assert {s["argv"][1] for s in seen} == {"--verbose=true", "--verbose=false"}  # flag knob
    assert {s["mode"] for s in seen} == {"true", "false"}  # env knob


def test_a_config_file_gets_true_and_risky_values_match_it(hone_cli, tmp_path: Path) -> None:
    """`values: [true, false]` in a config knob writes `debug = true`; its `risk` may name
    `false` (it was read as `off`, not one of the knob's values, and the project refused)."""
    (tmp_path / "app.conf").write_text("debug = false\n")
    project = {
        "name": "config-booleans",
        "knobs": {
            "debug": {
                "type": "categorical",
                "values": [True, False],
                "default": False,
                "config": {"file": "app.conf", "key": "debug", "restart": False},
                "risk": {"durability": [False]},
            }
        },
        "benchmark": {"command": "grep -q '^debug = true$' app.conf && echo s 2 || echo s 1"},
        "metrics": {"s": {"pattern": r"s (\d)", "direction": "maximize"}},
        "tuning": {"engine": "gridsearch", "budget": 2, "baseline": 1, "apply": "always",
                   "confirm": {"candidates": 1, "rounds": 2}},
    }  # fmt: skip
    (tmp_path / "hone.yaml").write_text(yaml.safe_dump(project))
    loaded = load_project(tmp_path)
    risk = loaded.knob("debug").risk
    assert risk is not None and risk.values == {"durability": ("false",)}
    run = hone_cli("tune", str(tmp_path), "--no-why")
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "app.conf").read_text() == "debug = true\n"  # the winner, applied


def test_a_bool_knobs_risky_false_is_its_off_word(tmp_path: Path) -> None:
    doc = {
        "name": "bool-risk",
        "knobs": {
            "sync": {"type": "bool", "on": "yes", "off": "no", "default": True,
                     "shell": {"set": "true", "get": "echo yes"},
                     "risk": {"durability": [False]}},
        },
        "benchmark": {"command": "echo s 1"},
        "metrics": {"s": {"pattern": r"s (\d)", "direction": "maximize"}},
    }  # fmt: skip
    (tmp_path / "hone.yaml").write_text(yaml.safe_dump(doc))
    knob = load_project(tmp_path).knob("sync")
    assert knob.risk is not None and knob.risk.values == {"durability": ("no",)}
    assert knob.actuator.spec()["set_command"] == "true"  # the shell's no-op, not `True`


def test_a_host_groups_workload_commands_are_spelled_as_written(tmp_path: Path) -> None:
    doc = {
        "name": "hosts-booleans",
        "hosts": {"web": {"hosts": ["w1"], "workload": {"start": True, "stop": True,
                                                         "ready": True}}},
        "knobs": {"x": {"type": "int", "range": [1, 2], "group": "web",
                        "sysctl": "vm.swappiness"}},
        "benchmark": {"command": "echo s 1"},
        "metrics": {"s": {"pattern": r"s (\d)", "direction": "maximize"}},
    }  # fmt: skip
    (tmp_path / "hone.yaml").write_text(yaml.safe_dump(doc))
    workload = load_project(tmp_path).group_workloads["web"]
    assert (workload.start, workload.stop, workload.ready) == ("true", "true", "true")


def test_atune_options_ref_and_commands_are_spelled_as_written(tmp_path: Path) -> None:
    """A-Tune's `options` and `ref` (already `true`), and its commands (were `True`)."""
    server = {
        "project": "atune-booleans",
        "startworkload": True,
        "stopworkload": True,
        "object": [
            {"name": "flag", "info": {"desc": "a boolean option", "get": "cat v",
                                      "set": "echo $value > v", "needrestart": False,
                                      "type": "discrete", "dtype": "string",
                                      "options": [True, False], "ref": True}},
        ],
    }  # fmt: skip
    client = {
        "project": "atune-booleans",
        "benchmark": "echo s 1",
        "evaluations": [{"name": "s", "info": {"get": "echo 1", "type": "negative"}}],
    }
    (tmp_path / "b_server.yaml").write_text(yaml.safe_dump(server))
    (tmp_path / "b_client.yaml").write_text(yaml.safe_dump(client))
    project = load_project(tmp_path)
    knob = project.knob("flag")
    assert list(knob.domain.values()) == ["true", "false"] and knob.reference == "true"
    assert (project.workload.start, project.workload.stop) == ("true", "true")
