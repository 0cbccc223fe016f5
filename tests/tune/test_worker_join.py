"""Workers that differ from the study they join, in a real PostgreSQL server: a worker given a
longer `--lease` than the others (it beats less often) is not declared lost by them, and a
worker whose project has other ranges or knobs than the study's is refused before it changes
anything."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from test_workers import finish, machine, start, wait_for

from hone.storage import StudyStore
from hone.storage.summary import read_trials


def test_a_worker_with_a_longer_lease_is_not_lost_to_one_with_a_shorter(
    postgres_url: str, tmp_path: Path
) -> None:
    """`slow` holds its trials with a 60 s lease (a heartbeat every 10 s) and measures for 3 s;
    `quick` holds its own with 2 s. Judged by quick's lease, slow's trial went 2 s without a
    heartbeat and was failed as lost while slow was alive (its result dropped). One candidate
    is confirmed in two rounds: slow, the first to finish, measures it for 3 s a reading too."""
    slow = machine(tmp_path, "slow", search_sleep=3, confirm="{candidates: 1, rounds: 2}")
    quick = machine(tmp_path, "quick", search_sleep=0.2, confirm="{candidates: 1, rounds: 2}")
    procs = [start(slow, postgres_url, "slow", 60, 5), start(quick, postgres_url, "quick", 2, 5)]
    outputs = [finish(proc) for proc in procs]
    store = StudyStore(postgres_url)
    trials = read_trials(store, store.find("shared"))
    assert not [t for t in trials if t.lost], [t.error for t in trials if t.lost]
    assert "dropped" not in outputs[0]
    slow_search = [t for t in trials if t.worker == "slow" and t.phase == "search"]
    assert slow_search and all(t.state == "complete" for t in slow_search)


def test_a_worker_with_other_ranges_or_knobs_is_refused(postgres_url: str, tmp_path: Path) -> None:
    first = machine(tmp_path, "first", search_sleep=2)
    running = start(first, postgres_url, "first", 5, 3)
    try:
        searching = lambda ts: [t for t in ts if t.phase == "search"]  # noqa: E731
        wait_for(StudyStore(postgres_url), 60, searching, "the first worker never searched")
        wider = machine(tmp_path, "wider")
        text = (wider / "hone.yaml").read_text()
        (wider / "hone.yaml").write_text(text.replace("range: [1, 9]", "range: [1, 20]"))
        renamed = machine(tmp_path, "renamed")
        text = (renamed / "hone.yaml").read_text()
        (renamed / "hone.yaml").write_text(text.replace("  level:", "  lvl:"))
        expected = {
            wider: "knob level is int [1, 20] here but int [1, 9] in the study",
            renamed: "knob level is not in this project",
        }
        refused = {folder: start(folder, postgres_url, folder.name, 5, 3) for folder in expected}
        for folder, why in expected.items():
            out, err = refused[folder].communicate(timeout=60)
            assert refused[folder].returncode == 2, err
            assert out == "", out  # the one line on stderr is all it prints
            lines = err.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("hone: study shared#1 runs another"), err
            assert why in lines[0]
            assert (folder / "app.conf").read_text() == "level 0\n"
    finally:
        # the first worker is stopped, not run to its end: what it does next is another test's
        running.send_signal(signal.SIGTERM)
        _out, err = running.communicate(timeout=60)
    assert running.returncode == 143, err[-800:]
    assert (first / "app.conf").read_text() == "level 0\n"


def test_a_worker_started_again_does_not_repeat_its_predecessors_proposals(
    postgres_url: str, tmp_path: Path
) -> None:
    """With a seed (the project's `tuning: {seed: 1}`), a worker started again under its name
    drew the random stream of the process before it: the same space-filling design, so the
    configurations its predecessor had measured were measured again, out of the budget."""
    folder = machine(tmp_path, "m", confirm="{candidates: 1}")
    text = (folder / "hone.yaml").read_text()
    (folder / "hone.yaml").write_text(text.replace("range: [1, 9]", "range: [1, 999]"))
    first = start(folder, postgres_url, "m", 5, 6)
    store = StudyStore(postgres_url)
    measured = lambda ts: [t for t in ts if t.phase == "search" and t.state == "complete"]  # noqa: E731
    wait_for(store, 60, measured, "the worker never finished a search trial")
    first.send_signal(signal.SIGTERM)
    first.communicate(timeout=60)
    before = {t.number for t in read_trials(store, store.find("shared"))}
    again = finish(start(folder, postgres_url, "m", 5, 7))  # the same machine, started again
    assert "--budget 7 not used: shared#1 keeps the budget 6 it was created with" in again
    trials = read_trials(store, store.find("shared"))
    earlier = [t.config for t in measured(trials) if t.number in before]
    later = [t.config for t in measured(trials) if t.number not in before]
    assert earlier and later and not [c for c in later if c in earlier], (earlier, later)
    assert store.find("shared").state == "finished"


def test_a_joining_worker_takes_the_studys_settings(postgres_url: str, tmp_path: Path) -> None:
    """`a` creates the study (seed 1, one baseline run, one candidate confirmed, start point
    level 3) and is stopped; `b` joins from a project file edited since (two candidates, start
    point level 8) with `--seed 9 --baseline 2`, and finishes the study alone. It took its own
    command's and file's: two baseline readings, level 8 measured first, three candidates
    confirmed. Each option set aside is said, and so are the project file's `tuning:` keys that
    differ from the study's (they were set aside without a word)."""
    a = machine(tmp_path, "a", start="[{level: 3}]", confirm="{candidates: 1, rounds: 1}")
    b = machine(tmp_path, "b", start="[{level: 8}]", confirm="{candidates: 3, rounds: 1}")
    for folder in (a, b):
        text = (folder / "hone.yaml").read_text()
        (folder / "hone.yaml").write_text(text.replace("range: [1, 9]", "range: [1, 999]"))
    first = start(a, postgres_url, "a", 5, 4)
    store = StudyStore(postgres_url)
    measured = lambda ts: [t for t in ts if t.phase == "search" and t.state == "complete"]  # noqa: E731
    wait_for(store, 60, measured, "the first worker never finished a search trial")
    first.send_signal(signal.SIGTERM)
    first.communicate(timeout=60)
    out = finish(start(b, postgres_url, "b", 5, 4, "--seed", "9", "--baseline", "2"))
    assert "--seed 9 not used: shared#1 keeps the seed 1 it was created with" in out, out
    assert "--baseline 2 not used: shared#1 keeps the baseline count 1 it was created with" in out
    unused = "tuning: confirm, start of this project file not used: shared#1 keeps the settings"
    assert out.count(unused) == 1, out
    study = store.find("shared")
    assert study.state == "finished" and study.attrs["result"]["confirmed_by"] == "b"
    assert study.attrs["tuning"]["start"] == [{"level": 3}]
    trials = read_trials(store, study)
    assert [t.phase for t in trials if t.worker == "b"].count("baseline") == 1
    b_search = sorted(
        (t for t in trials if t.worker == "b" and t.phase == "search"), key=lambda t: t.number
    )
    assert b_search and b_search[0].config["level"] != 8, [t.config for t in b_search]
    confirmed = {t.config["level"] for t in trials if t.phase == "confirm"} - {0}
    assert len(confirmed) == 1, confirmed


def test_a_joining_worker_judges_trials_by_the_studys_rules(
    postgres_url: str, tmp_path: Path
) -> None:
    """`a` creates the study (`--apply always`, the constraint `level <= 500`, `level` marked
    risky) and is stopped; `b` joins from a project file whose constraint says `level >= 600`,
    whose limit `score >= 100000` every reading breaks and whose `level` is not marked, and
    finishes the study alone. It went by its own file: its baseline failed by its limit, and
    it would have searched outside the study's constraint and applied a risky winner."""
    a = machine(tmp_path, "a", confirm="{candidates: 1, rounds: 1}")
    b = machine(tmp_path, "b", confirm="{candidates: 1, rounds: 1}")
    for folder, constraint in ((a, "level <= 500"), (b, "level >= 600")):
        text = (folder / "hone.yaml").read_text().replace("range: [1, 9]", "range: [1, 999]")
        (folder / "hone.yaml").write_text(text + f"constraints: ['{constraint}']\n")
    key = "config: {file: app.conf, format: space, key: level}\n"
    text = (a / "hone.yaml").read_text()
    (a / "hone.yaml").write_text(text.replace(key, key + "    risk: availability\n"))
    text = (b / "hone.yaml").read_text()
    (b / "hone.yaml").write_text(text.replace("maximize}", "maximize, limit: '>= 100000'}"))
    first = start(a, postgres_url, "a", 5, 4, "--apply", "always")
    store = StudyStore(postgres_url)
    measured = lambda ts: [t for t in ts if t.phase == "search" and t.state == "complete"]  # noqa: E731
    wait_for(store, 60, measured, "the first worker never finished a search trial")
    first.send_signal(signal.SIGTERM)
    first.communicate(timeout=60)
    out = finish(start(b, postgres_url, "b", 5, 4))
    study = store.find("shared")
    trials = read_trials(store, study)
    b_search = [t for t in trials if t.worker == "b" and t.phase == "search"]
    assert b_search and all(t.state == "complete" for t in b_search), [t.error for t in b_search]
    assert all(t.config["level"] <= 500 for t in b_search), [t.config for t in b_search]
    result = study.attrs["result"]
    assert result["confirmed_by"] == "b" and result["outcome"] == "restored", result
    assert result["risk"] is not None and not result["risk"]["allowed"], result
    assert (b / "app.conf").read_text() == "level 0\n"
    said = (
        "warning: constraints, limit of score, risk of level of this project file not used: "
        "shared#1 keeps those it was created with (a knob marked risky in either stays risky)"
    )
    assert out.count(said) == 1, out
    assert "warning: tuning: apply of this project file not used" in out, out


def test_a_worker_of_the_same_name_on_another_machine_is_refused(
    postgres_url: str, tmp_path: Path
) -> None:
    """Two machines of one host name (cloned, or replicas of one container with their own
    pids) both default to it as their worker's name. The second, started while the first
    measures, took the first's pid for one of its own machine's, found none, failed the live
    trial as its own killed predecessor's (`interrupted`) and ran on under the same name: the
    first's result was dropped. A pid recorded on another machine means nothing here: the
    second is refused in one line and the trial goes on."""
    first = machine(tmp_path, "first", search_sleep=30)
    running = start(first, postgres_url, "box", 5, 3)
    try:
        store = StudyStore(postgres_url)
        measuring = lambda ts: [t for t in ts if t.phase == "search" and t.state == "running"]  # noqa: E731
        (trial,) = wait_for(store, 60, measuring, "the first worker never searched")
        clone = machine(tmp_path, "clone")
        # another machine: the same name, its own pids (a pid namespace, /proc of its own)
        argv = ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-m", "hone"]
        argv += ["worker", str(clone), "--storage", postgres_url, "--worker-id", "box"]
        env = {**os.environ, "HONE_HOME": str(clone / "home")}
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr.startswith(
            f"hone: worker box is already running trial #{trial.number} of shared#1 on another"
            " machine"
        ), done.stderr
        assert done.stderr.count("\n") == 1 and (clone / "app.conf").read_text() == "level 0\n"
        (still,) = [t for t in read_trials(store, store.find("shared")) if t.number == trial.number]
        assert still.state == "running" and not still.lost, still.error
    finally:
        running.send_signal(signal.SIGTERM)
        _out, err = running.communicate(timeout=60)
    assert running.returncode == 143, err[-800:]
