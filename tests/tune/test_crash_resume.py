"""`kill -9` in the middle of a trial: `hone restore` brings every knob back (a real kernel
setting among them), the next run warns, and `--resume` continues with every finished trial."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from killed_before_record import run_and_die_at_the_record
from started_hone import Process, start_hone, wait_for_study
from swappiness_project import SWAPPINESS, write_project

from hone.errors import HoneError
from hone.journal import Journal
from hone.project import load_project
from hone.storage import StudyStore
from hone.tune.console import Reporter
from hone.tune.records import TuneOptions
from hone.tune.runner import Tuner


def make_project(
    tmp_path: Path, swappiness: int, apply: str = "never", baseline: int = 1, budget: int = 8
) -> Path:
    """level starts at 5; vm.swappiness is tried at its value and one other."""
    values = sorted({swappiness, 1 if swappiness != 1 else 2})
    (tmp_path / "level.txt").write_text("5\n")
    (tmp_path / "bench.py").write_text(
        textwrap.dedent("""\
        import time
        level = int(open("level.txt").read())
        swappiness = int(open("/proc/sys/vm/swappiness").read())
        time.sleep(0.2)
        print(f"score: {1000 - (level - 7) ** 2 + swappiness / 100}")
    """)
    )
    tuning = {"engine": "random", "budget": budget, "baseline": baseline, "apply": apply, "seed": 3,
              "confirm": {"candidates": 1, "rounds": 2}}  # fmt: skip
    return write_project(tmp_path, "crash-test", values, timeout=20, tuning=tuning)


def assert_back(folder: Path, swappiness: int) -> None:
    """Both knobs hold their original values again."""
    assert (folder / "level.txt").read_text().strip() == "5"
    assert int(SWAPPINESS.read_text()) == swappiness


def start_tune(project: Path, hone_home: Path, *options: str) -> Process:
    return start_hone(
        "tune", str(project), *options,
        env={**os.environ, "HONE_HOME": str(hone_home)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip


def wait_for_trials(proc: Process, after_trials: int) -> None:
    """Return once `after_trials` search trials are stored and the next one is running."""

    def ready(trials: list) -> bool:
        done = [t for t in trials if t.phase == "search" and t.state != "running"]
        return len(done) >= after_trials and any(t.state == "running" for t in trials)

    wait_for_study(proc, "crash-test", ready, 120, "the trial to wait for")


def kill(proc: Process) -> None:
    with contextlib.suppress(ProcessLookupError):  # ended already (the test says how)
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def start_and_kill(project: Path, hone_home: Path, after_trials: int, *options: str) -> None:
    """Start `hone tune` and SIGKILL it (and its benchmark) once trials are stored."""
    proc = start_tune(project, hone_home, *options)
    try:
        wait_for_trials(proc, after_trials)
    finally:
        kill(proc)


def finished_search(store: StudyStore) -> list:
    return [
        t
        for t in store.trials(store.find("crash-test"))
        if t.phase == "search" and t.state == "complete"
    ]


def test_restore_after_kill_9(tmp_path: Path, hone_home: Path, hone_cli, swappiness: int) -> None:
    project = make_project(tmp_path, swappiness)
    start_and_kill(project, hone_home, after_trials=2)
    listed = hone_cli("studies")  # its process is gone: not taken for a run still going
    assert "crash-test#1 │ running (stale)" in listed.stdout, listed.stdout
    shown = hone_cli("show", "crash-test")
    assert shown.stdout.startswith("study crash-test#1: running (stale)"), shown.stdout
    journal = Journal.for_project("crash-test")
    assert journal.unfinished() is not None
    assert set(journal.originals()) == {"level", "swappiness"}

    result = hone_cli("restore", "crash-test", "--json")
    assert result.returncode == 0, result.stderr
    assert_back(tmp_path, swappiness)
    restored = {k["knob"]: k for k in json.loads(result.stdout)["knobs"]}
    assert set(restored) == {"level", "swappiness"}
    assert restored["swappiness"]["value"] == str(swappiness) and restored["level"]["ok"]
    again = hone_cli("restore", "crash-test", "--json")
    assert json.loads(again.stdout) == {"project": "crash-test", "stopped": [], "knobs": []}


def test_resume_after_kill_9_keeps_every_finished_trial(
    tmp_path: Path, hone_home: Path, hone_cli, swappiness: int
) -> None:
    """It goes on with the study's own engine and budget, not the project file's (random, 8)."""
    project = make_project(tmp_path, swappiness)
    start_and_kill(project, hone_home, 3, "--engine", "lhs", "--budget", "6")
    store = StudyStore()
    before = {t.number: t.config for t in finished_search(store)}
    assert len(before) >= 3

    result = hone_cli("tune", str(project), "--resume", "--no-why")
    assert result.returncode == 0, result.stderr
    assert "did not finish" in result.stdout
    assert "interrupted trial(s) recorded as failed" in result.stdout
    assert "finished trials replayed (engine lhs, budget 6)" in result.stdout
    trials = store.trials(store.find("crash-test"))
    search = [t for t in trials if t.phase == "search"]
    kept = {t.number: t.config for t in search if t.number in before}
    assert kept == before  # nothing lost
    assert sum(t.state == "complete" for t in search) == 6  # the killed trial is not counted
    assert any(t.error == "interrupted (hone was stopped)" for t in search)
    assert [s.name for s in store.studies()] == ["crash-test#1"]
    # apply: never, so the run itself put everything back at the end
    assert_back(tmp_path, swappiness)


def test_resume_keeps_the_apply_policy_the_study_began_with(
    tmp_path: Path, hone_home: Path, hone_cli, swappiness: int
) -> None:
    """A study begun with `--apply never` and resumed without `--apply` (the web UI's Resume
    gives none) leaves the machine as it was, though the project file says `apply: always`."""
    # two trials left to the resumed run: its end, where the policy acts, is under test
    project = make_project(tmp_path, swappiness, apply="always", budget=4)
    start_and_kill(project, hone_home, 2, "--apply", "never")

    result = hone_cli("tune", str(project), "--resume", "--no-why")
    assert result.returncode == 0, result.stderr
    assert "--apply never: every knob put back" in result.stdout + result.stderr
    assert_back(tmp_path, swappiness)


def test_resume_keeps_the_settings_the_study_began_with(
    tmp_path: Path, hone_home: Path, hone_cli, swappiness: int
) -> None:
    """A study begun with `--baseline 1 --seed 5 --max-repeats 4` and resumed without them (the
    web UI's Resume gives none) takes no more baseline readings, though the project file says
    3, and keeps its seed, its most rounds and the confirmation rounds its project file gave
    when it began (2), though the file now says 4."""
    project = make_project(tmp_path, swappiness, baseline=3, budget=4)
    start_and_kill(project, hone_home, 2, "--baseline", "1", "--seed", "5", "--max-repeats", "4")
    spec = yaml.safe_load(project.read_text())
    spec["tuning"]["confirm"]["rounds"] = 4
    spec["tuning"]["seed"] = 9
    project.write_text(yaml.safe_dump(spec, sort_keys=False))

    result = hone_cli("tune", str(project), "--resume", "--no-why")
    assert result.returncode == 0, result.stderr
    store = StudyStore()
    study = store.find("crash-test")
    trials = store.trials(study)
    assert sum(t.phase == "baseline" and t.state == "complete" for t in trials) == 1
    quality = study.attrs["quality"]  # written again by the resumed run
    assert (quality["runs"], quality["rounds"], quality["max_rounds"]) == (1, 2, 4), quality
    assert study.attrs["tuning"]["seed"] == 5 and study.attrs["options"]["max_repeats"] == 4
    assert_back(tmp_path, swappiness)


def test_resume_keeps_the_start_points_and_selection_the_study_began_with(
    tmp_path: Path, hone_home: Path, hone_cli, swappiness: int
) -> None:
    """A study begun with `start: [{level: 2}]` and `select: {count: 1, trials: 5}`, resumed
    after the project file's `start:` became two other points and its `select:` was removed,
    measured the new start points first and never selected its knobs."""
    project = make_project(tmp_path, swappiness)
    spec = yaml.safe_load(project.read_text())
    spec["tuning"].update(start=[{"level": 2}], select={"count": 1, "trials": 5})
    project.write_text(yaml.safe_dump(spec, sort_keys=False))
    start_and_kill(project, hone_home, 2)
    store = StudyStore()
    before = {t.number for t in store.trials(store.find("crash-test"))}
    assert min(finished_search(store), key=lambda t: t.number).config["level"] == 2
    spec["tuning"]["start"] = [{"level": 3}, {"level": 4}]
    del spec["tuning"]["select"]
    project.write_text(yaml.safe_dump(spec, sort_keys=False))

    result = hone_cli("tune", str(project), "--resume", "--no-why")
    assert result.returncode == 0, result.stderr
    study = store.find("crash-test")
    assert study.attrs["tuning"]["start"] == [{"level": 2}]
    assert study.attrs["tuning"]["feature_filter"]["count"] == 1
    later = sorted(
        (t for t in store.trials(study) if t.phase == "search" and t.number not in before),
        key=lambda t: t.number,
    )
    firsts = [(t.config["level"], t.config["swappiness"]) for t in later[:2]]
    assert firsts != [(3, swappiness), (4, swappiness)], firsts
    assert study.attrs["selection"]["knobs"], study.attrs.get("selection")
    assert "kept the 1 knobs that matter most" in result.stdout, result.stdout
    assert_back(tmp_path, swappiness)


def test_restore_while_tune_runs_is_refused_and_keeps_the_originals(
    tmp_path: Path, hone_home: Path, hone_cli, swappiness: int
) -> None:
    """`hone restore` during a run would archive the originals the run still needs."""
    project = make_project(tmp_path, swappiness)
    proc = start_tune(project, hone_home)
    try:
        wait_for_trials(proc, 1)
        result = hone_cli("restore", "crash-test")
        assert result.returncode == 2, result.stdout
        assert f"pid {proc.pid}" in result.stderr and "stop it first" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        assert set(Journal.for_project("crash-test").originals()) == {"level", "swappiness"}
    finally:
        kill(proc)
    result = hone_cli("restore", "crash-test")
    assert result.returncode == 0, result.stderr
    assert_back(tmp_path, swappiness)


def test_a_set_command_of_a_killed_run_never_writes_after_restore(
    tmp_path: Path, hone_home: Path, hone_cli
) -> None:
    """A set command runs in its own process group, so SIGKILL of hone leaves it running:
    restore stops it before it puts the originals back."""
    (tmp_path / "level.txt").write_text("5\n")
    (tmp_path / "bench.py").write_text("print('score:', open('level.txt').read())\n")
    (tmp_path / "hone.yaml").write_text(
        textwrap.dedent("""\
        name: slow-set
        knobs:
          level:
            type: int
            range: [1, 9]
            shell:
              get: cat level.txt
              set: 'echo "$value" > started.txt; [ "$value" = 5 ] || sleep 4;
                    echo "$value" > level.txt'
        benchmark: {command: python3 bench.py, timeout: 20}
        metrics:
          score: {pattern: 'score: (\\S+)', direction: maximize}
        tuning: {engine: random, budget: 6, baseline: 1, apply: never, seed: 3}
        """)
    )
    proc = start_hone(
        "tune", str(tmp_path),
        env={**os.environ, "HONE_HOME": str(hone_home)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    started = tmp_path / "started.txt"
    deadline = time.monotonic() + 60
    while not (started.exists() and started.read_text().strip() not in ("", "5")):
        assert time.monotonic() < deadline and proc.poll() is None, "no trial set started"
        time.sleep(0.05)
    seen = time.monotonic()  # the set command started before this, so it writes before seen + 4
    proc.kill()  # hone alone: its set command lives on in a group of its own
    proc.wait()
    result = hone_cli("restore", "slow-set")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "level.txt").read_text().strip() == "5"
    time.sleep(max(0.0, seen + 5 - time.monotonic()))  # a second past when the set would write
    assert (tmp_path / "level.txt").read_text().strip() == "5"
    assert not list((hone_home / "running").glob("*.json"))


def test_two_projects_never_change_one_setting_at_once(
    tmp_path: Path, hone_home: Path, hone_cli, swappiness: int
) -> None:
    """The second would journal the first's trial value as its original."""
    (tmp_path / "first").mkdir()
    first = make_project(tmp_path / "first", swappiness, budget=50)  # still running when killed
    second = tmp_path / "second"
    second.mkdir()
    text = first.read_text().replace("name: crash-test", "name: second-project")
    (second / "hone.yaml").write_text(text)
    (second / "bench.py").write_text((tmp_path / "first" / "bench.py").read_text())
    (second / "level.txt").write_text("5\n")
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "swap.conf").write_text("[sysctl]\nvm.swappiness = 33\n")
    proc = start_tune(first, hone_home)
    try:
        wait_for_trials(proc, 1)
        result = hone_cli("tune", str(second))
        assert result.returncode == 2
        assert "sysctl:vm.swappiness is being changed by another hone process" in result.stderr
        assert not Journal.for_project("second-project").has_changes()
        os.environ["HONE_PROFILE_PATH"] = str(profiles)
        try:
            result = hone_cli("profile", "apply", "swap")
        finally:
            del os.environ["HONE_PROFILE_PATH"]
        assert result.returncode == 2 and "is being changed" in result.stderr
    finally:
        kill(proc)
    assert hone_cli("restore", "crash-test").returncode == 0
    assert int(SWAPPINESS.read_text()) == swappiness


def test_a_set_command_whose_hone_dies_before_recording_it_never_runs(
    tmp_path: Path, hone_home: Path
) -> None:
    """hone records a set command once it has started (its pid names the record): a kill in
    between would leave it running unrecorded, out of restore's reach. Here hone dies exactly
    there; the command must not run at all."""
    marker = tmp_path / "written.txt"
    code = f"from hone import shell\nshell.run('sleep 0.5; echo 7 > {marker}', tracked=True)\n"
    run_and_die_at_the_record(code, hone_home)
    time.sleep(1.5)  # when the command, had it run, would long have written
    assert not marker.exists()
    # and a recorded one still runs: the gate opens once the record is written
    code = f"from hone import shell\nprint(shell.run('echo 7 > {marker}; echo ok', tracked=True))\n"
    done = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, "HONE_HOME": str(hone_home)},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert marker.read_text() == "7\n" and "returncode=0" in done.stdout, done.stdout


def test_resume_of_a_study_whose_project_changed_is_one_line(tmp_path: Path) -> None:
    """A knob added since the study began: its trials cannot be replayed into the new space
    (a KeyError traceback, after the baseline was applied). Refused before any change."""
    (tmp_path / "level.txt").write_text("5\n")
    (tmp_path / "other.txt").write_text("3\n")
    shell = {"get": "cat level.txt", "set": 'echo "$value" > level.txt'}
    project = {
        "name": "changed-knobs",
        "knobs": {"level": {"type": "int", "range": [1, 9], "shell": shell}},
        "benchmark": {"command": "test -e ok && echo score: $(cat level.txt)", "timeout": 10},
        "metrics": {"score": {"pattern": r"score: (\d+)", "direction": "maximize"}},
        "tuning": {"engine": "random", "budget": 2, "baseline": 1},
    }
    path = tmp_path / "hone.yaml"
    path.write_text(yaml.safe_dump(project))
    with pytest.raises(HoneError, match="every baseline run failed"):  # left unfinished
        Tuner(load_project(path), Reporter(), TuneOptions(why=False)).run()
    (tmp_path / "ok").touch()
    other = {"get": "cat other.txt", "set": 'echo "$value" > other.txt'}
    project["knobs"]["other"] = {"type": "int", "range": [1, 9], "shell": other}
    path.write_text(yaml.safe_dump(project))
    with pytest.raises(HoneError) as refused:
        Tuner(load_project(path), Reporter(), TuneOptions(why=False, resume=True)).run()
    assert refused.value.message.startswith(
        "cannot resume study changed-knobs#1: its knobs differ from the project's now"
    )
    assert StudyStore().find("changed-knobs").state == "interrupted"


def test_resume_judges_trials_by_the_rules_the_study_began_with(
    tmp_path: Path, hone_home: Path, hone_cli
) -> None:
    """A study begun with the constraint `level <= 4`, the limit `score <= 1000` and `mode:
    fast` marked risky, stopped (SIGTERM, sent by its benchmark's fourth run) and resumed after
    the project file's constraint became `level >= 6`, its limit `score >= 5000` and its risk
    mark `none`: the resumed run proposed levels the earlier trials were kept from, failed
    every trial by the new limit, and would apply `fast` without --allow-risk."""
    (tmp_path / "level.txt").write_text("1\n")
    (tmp_path / "mode.txt").write_text("safe\n")
    (tmp_path / "bench.sh").write_text(
        textwrap.dedent("""\
        n=$(($(cat n.txt 2>/dev/null || echo 0) + 1)); echo $n > n.txt
        [ $n = 4 ] && kill -TERM "$(cat hone.pid)" && sleep 30
        level=$(cat level.txt); bonus=0; [ "$(cat mode.txt)" = fast ] && bonus=50
        echo "score: $((100 + bonus - (level - 3) * (level - 3) + n % 2))"
    """)
    )

    def shell(name: str) -> dict[str, str]:
        return {"get": f"cat {name}.txt", "set": f'echo "$value" > {name}.txt'}

    spec = {
        "name": "rules",
        "knobs": {
            "level": {"type": "int", "range": [1, 9], "shell": shell("level")},
            "mode": {
                "type": "categorical",
                "values": ["safe", "fast"],
                "shell": shell("mode"),
                "risk": {"durability": ["fast"]},
            },
        },
        "constraints": ["level <= 4"],
        "benchmark": {"command": "sh bench.sh", "timeout": 60},
        "metrics": {
            "score": {"pattern": r"score: (\S+)", "direction": "maximize", "limit": "<= 1000"}
        },
        "tuning": {"engine": "random", "budget": 8, "baseline": 1, "seed": 3, "apply": "always",
                   "confirm": {"candidates": 2, "rounds": 1}},
    }  # fmt: skip
    project = tmp_path / "hone.yaml"
    project.write_text(yaml.safe_dump(spec, sort_keys=False))
    proc = start_hone(
        "tune", str(project), "--no-why",
        env={**os.environ, "HONE_HOME": str(hone_home)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    (tmp_path / "hone.pid").write_text(str(proc.pid))
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    store = StudyStore()
    before = {t.number for t in store.trials(store.find("rules"))}
    spec["constraints"] = ["level >= 6"]
    spec["metrics"]["score"]["limit"] = ">= 5000"
    spec["knobs"]["mode"]["risk"] = "none"
    project.write_text(yaml.safe_dump(spec, sort_keys=False))

    result = hone_cli("tune", str(project), "--resume", "--no-why")
    assert result.returncode == 0, result.stderr
    study = store.find("rules")
    later = [t for t in store.trials(study) if t.phase == "search" and t.number not in before]
    assert later and all(t.config["level"] <= 4 for t in later), [t.config for t in later]
    assert all(t.state == "complete" for t in later), [t.error for t in later]
    risk = study.attrs["result"]["risk"]
    assert risk is not None and not risk["allowed"], study.attrs["result"]
    assert (tmp_path / "mode.txt").read_text() == "safe\n"
    said = (
        "warning: constraints, limit of score, risk of mode of this project file not used: "
        "rules#1 keeps those it was created with (a knob marked risky in either stays risky)"
    )
    assert result.stdout.count(said) == 1, result.stdout
