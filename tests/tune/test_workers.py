"""`hone worker`: several worker processes, each a "machine" of its own (its own HONE_HOME,
project folder and config-file knob), share one study in a real PostgreSQL server; a kill -9
of one mid-trial leaves that trial failed with the reason, the others finish the study, and
`hone restore` on the killed worker's journal puts its knob back."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from forked_hone import run_hone
from rich.console import Console
from started_hone import Process, start_hone

from hone.storage import StudyStore
from hone.storage.summary import read_trials, summaries
from hone.tune.views import show_study, studies_table

BUDGET = 6


def machine(
    root: Path,
    name: str,
    search_sleep: float = 0.3,
    offset: int = 0,
    start: str = "",
    confirm: str = "",
) -> Path:
    """A project folder whose knob is a key of app.conf (0 before tuning, outside the range,
    so every search trial changes it); the benchmark sleeps 0.3 s, `search_sleep` in search,
    and scores `offset` more than on other machines (machines of one kind still differ);
    `start` and `confirm`: the tuning section's start points and confirmation (YAML)."""
    folder = root / name
    folder.mkdir()
    (folder / "app.conf").write_text("level 0\n")
    (folder / "bench.py").write_text(
        textwrap.dedent(f"""\
        import time
        level = int(open("app.conf").read().split()[1])
        time.sleep(0.3 if level == 0 else {search_sleep})
        print(f"score: {{{100 + offset} - (level - 6) ** 2}}")
    """)
    )
    (folder / "hone.yaml").write_text(
        textwrap.dedent("""\
        name: shared
        knobs:
          level:
            type: int
            range: [1, 9]
            config: {file: app.conf, format: space, key: level}
        benchmark: {command: python3 bench.py, timeout: 20}
        metrics:
          score: {pattern: 'score: (\\S+)', direction: maximize}
        tuning: {engine: auto, baseline: 1, seed: 1%s%s}
    """)
        % (f", start: {start}" if start else "", f", confirm: {confirm}" if confirm else "")
    )
    return folder


def start(
    folder: Path, url: str, name: str, lease: float = 2.0, budget: int = BUDGET, *more: str
) -> Process:
    """`hone worker` for the machine `folder` (its own HONE_HOME), in a session of its own so
    that a test can kill it with what it started."""
    return start_hone(
        *("worker", str(folder), "--storage", url),
        *("--worker-id", name, "--budget", str(budget), "--lease", str(lease), *more),
        env={**os.environ, "HONE_HOME": str(folder / "home")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def finish(proc: Process) -> str:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err[-800:]
    return out


def hone_at(home: Path, *args: str) -> subprocess.CompletedProcess:
    """The `hone` command line on the machine whose HONE_HOME is `home`."""
    env = {**os.environ, "HONE_HOME": str(home)}
    return run_hone(*args, env=env, cwd=Path.cwd(), timeout=60)


def studies_json(url: str, home: Path) -> list[dict]:
    result = hone_at(home, "studies", "--storage", url, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def wait_for(store: StudyStore, seconds: float, found: Any, failure: str) -> list:
    """Poll the shared study until `found(trials)` returns a non-empty list, and return it."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.1)
        try:
            trials = read_trials(store, store.find("shared"))
        except Exception:  # the study is not there yet
            continue
        if result := found(trials):
            return result
    pytest.fail(failure)


def test_three_workers_share_one_study(postgres_url: str, tmp_path: Path) -> None:
    names = ["w1", "w2", "w3"]
    # a profile's values as the start point: measured once, first, by one of the workers
    start_point = "[{level: 3}]"
    folders = [
        machine(tmp_path, name, offset=10 * i, start=start_point) for i, name in enumerate(names)
    ]
    procs = [start(folder, postgres_url, name) for folder, name in zip(folders, names, strict=True)]
    outputs = [finish(proc) for proc in procs]
    store = StudyStore(postgres_url)
    study = store.find("shared")
    assert study.name == "shared#1"  # started together, the workers made one study
    trials = read_trials(store, study)
    search = [t for t in trials if t.phase == "search"]
    assert len(search) == BUDGET and all(t.state == "complete" for t in search)
    assert min(search, key=lambda t: t.number).config["level"] == 3  # the start point first
    baselines = [t for t in trials if t.phase == "baseline"]
    assert sorted(t.worker for t in baselines) == names  # a baseline on every machine
    assert all(t.score == 0.0 for t in baselines)  # each scored against its own baseline
    assert {t.worker for t in search} <= set(names) and len({t.worker for t in search}) >= 2
    for trial in search:  # never proposed what another worker was measuring at the time
        for other in search:
            running = other.started < trial.started < other.started + other.seconds
            assert other is trial or not running or other.config != trial.config
    for trial in search:  # a gain in % over the worker's own baseline score (100 - 36 = 64)
        level, base = trial.config["level"], 64 + 10 * names.index(trial.worker)
        assert trial.score == pytest.approx((base + 36 - (level - 6) ** 2 - base) / base * 100)
    # one worker confirmed the best against its own baseline; every worker applied the winner
    result = store.storage.get_study_user_attrs(study.study_id)["result"]
    confirm = [t for t in trials if t.phase == "confirm"]
    assert confirm and {t.worker for t in confirm} == {result["confirmed_by"]}
    assert result["outcome"] == "applied" and result["gain"]["mean"] > 0, result
    winner = f"level {result['best']['level']}\n"
    assert all("winner applied here" in out for out in outputs)
    assert all((f / "app.conf").read_text() == winner for f in folders)
    listed = next(s for s in studies_json(postgres_url, tmp_path) if s["name"] == "shared#1")
    assert listed["state"] == "finished" and listed["trials"] == BUDGET + 3 + len(confirm)
    assert [(w["id"], w["state"], w["running"]) for w in listed["workers"]] == [
        (name, "finished", None) for name in names
    ]
    console = Console(width=300, record=True)
    console.print(studies_table(StudyStore(postgres_url)))  # what `hone studies` prints
    assert "w1: finished, w2: finished, w3: finished" in console.export_text()
    show_study(console, "shared#1", postgres_url)  # what `hone show` prints
    shown = console.export_text().splitlines()
    assert any(line.startswith("best: level=") for line in shown)
    assert all(line.strip() for line in shown), shown  # no line of spaces
    assert [w["baseline_metrics"] for w in listed["workers"]] == [
        {"score": 64.0},
        {"score": 74.0},
        {"score": 84.0},
    ]
    # the winner stays undoable: the journal keeps the originals
    restored = hone_at(folders[0] / "home", "restore", str(folders[0]))
    assert restored.returncode == 0, restored.stderr
    assert (folders[0] / "app.conf").read_text() == "level 0\n"


def test_a_killed_worker_leaves_its_trial_failed_and_restore_brings_its_knob_back(
    postgres_url: str, tmp_path: Path
) -> None:
    # one confirmation candidate: the lost trial and the restore are the point
    victim_folder = machine(tmp_path, "victim", search_sleep=4, confirm="{candidates: 1}")
    survivor_folder = machine(tmp_path, "survivor", confirm="{candidates: 1}")
    victim = start(victim_folder, postgres_url, "victim")
    survivor = start(survivor_folder, postgres_url, "survivor")
    store = StudyStore(postgres_url)

    def victim_searching(trials: list) -> list:  # its first search trial, knob changed
        running = [t for t in trials if t.worker == "victim" and t.phase == "search"]
        changed = (victim_folder / "app.conf").read_text() != "level 0\n"
        return running if running and running[-1].state == "running" and changed else []

    running = wait_for(store, 40, victim_searching, "the victim never ran a search trial")
    # mid-trial, on a machine of the same kind other workers can see:
    during = next(s for s in summaries(store) if s["name"] == "shared#1")  # = studies --json
    victim_row = next(w for w in during["workers"] if w["id"] == "victim")
    assert victim_row["running"] == running[-1].number
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()
    finish(survivor)
    trials = read_trials(store, store.find("shared"))
    lost = next(t for t in trials if t.number == running[-1].number)
    assert lost.state == "fail" and lost.lost
    assert "worker victim stopped reporting: no heartbeat" in (lost.error or "")
    counted = [t for t in trials if t.phase == "search" and not t.lost]
    assert len(counted) == BUDGET and all(t.state == "complete" for t in counted)
    assert not [t for t in trials if t.state == "running"]
    listed = next(s for s in studies_json(postgres_url, tmp_path) if s["name"] == "shared#1")
    assert listed["state"] == "finished"
    states = {w["id"]: w["state"] for w in listed["workers"]}
    assert states == {"victim": "lost", "survivor": "finished"}
    assert (victim_folder / "app.conf").read_text() != "level 0\n"  # left changed by the kill
    restored = hone_at(victim_folder / "home", "restore", str(victim_folder))
    assert restored.returncode == 0, restored.stderr
    assert (victim_folder / "app.conf").read_text() == "level 0\n"


def test_a_confirming_worker_killed_is_replaced_and_the_winner_still_applied(
    postgres_url: str, tmp_path: Path
) -> None:
    names = ["a", "b"]
    # one candidate confirmed: the take-over is the point, not how many candidates it measures
    folders = {n: machine(tmp_path, n, search_sleep=1.0, confirm="{candidates: 1}") for n in names}
    procs = {n: start(folders[n], postgres_url, n) for n in names}
    store = StudyStore(postgres_url)

    def measuring_the_candidate(trials: list) -> list:  # its 1 s reading, not the baseline's
        return [
            t
            for t in trials
            if t.phase == "confirm" and t.state == "running" and t.config["level"] != 0
        ]

    confirming = wait_for(  # the elected worker measuring a confirmation round
        store, 90, measuring_the_candidate, "no worker confirmed"
    )
    victim = confirming[0].worker
    survivor = next(n for n in names if n != victim)
    os.killpg(procs[victim].pid, signal.SIGKILL)
    procs[victim].wait()
    out = finish(procs[survivor])
    trials = read_trials(store, store.find("shared"))
    killed = next(t for t in trials if t.number == confirming[0].number)
    assert killed.state == "fail" and killed.lost and f"worker {victim} stopped" in killed.error
    assert not [t for t in trials if t.state == "running"]
    study = store.find("shared")
    result = store.storage.get_study_user_attrs(study.study_id)["result"]
    assert study.state == "finished" and result["confirmed_by"] == survivor, result
    assert result["outcome"] == "applied", result
    assert "winner applied here" in out
    assert (folders[survivor] / "app.conf").read_text() == f"level {result['best']['level']}\n"
    # the victim's machine: back with `hone restore` there
    restored = hone_at(folders[victim] / "home", "restore", str(folders[victim]))
    assert restored.returncode == 0, restored.stderr
    assert (folders[victim] / "app.conf").read_text() == "level 0\n"
