"""Restarts: a study restarts its workload only when a knob that needs it changed, records how
often it did, and measures a warmed-up workload's confirmation rounds in a snake (each round
reverses the last) so that the restart between two rounds is saved."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import textwrap
import time
from collections import defaultdict
from pathlib import Path

import pytest

from hone.errors import BenchmarkError
from hone.project import load_project
from hone.project.model import Workload
from hone.tune.console import Reporter
from hone.tune.records import TuneOptions
from hone.tune.runner import Tuner
from hone.workload.launch import LaunchSpec
from hone.workload.manager import WorkloadManager


def _project(folder: Path, warmup: bool) -> Path:
    """A workload whose every start is counted in a file, a knob that needs a restart, one that
    does not, and a benchmark that varies a little whatever the knobs say."""
    (folder / "hone.yaml").write_text(
        textwrap.dedent(f"""\
        name: restarts
        workload:
          start: echo started >> "$HONE_WORKDIR/starts"
          stop: "true"
        knobs:
          mode:
            type: categorical
            values: [a, b, c]
            restart: true
            shell:
              get: cat "$HONE_WORKDIR/mode" 2>/dev/null || echo a
              set: echo $value > "$HONE_WORKDIR/mode"
          tag:
            type: categorical
            values: [x, y]
            restart: false
            shell:
              get: cat "$HONE_WORKDIR/tag" 2>/dev/null || echo x
              set: echo $value > "$HONE_WORKDIR/tag"
        benchmark:
          command: echo "ops $((1000 + (ITERATION * 7) % 11))"
          warmup: {"true" if warmup else "false"}
        metrics: {{ops: {{pattern: 'ops ([0-9]+)', direction: maximize}}}}
        tuning: {{budget: 3, baseline: 2, engine: random, seed: 3, apply: never,
                 confirm: {{candidates: 2, rounds: 3}}}}
        """)
    )
    return folder


def _study(hone_cli, hone_home: Path, folder: Path) -> tuple[dict, list[dict], int]:
    run = hone_cli("tune", str(folder), "--no-why", "--max-repeats", "3")
    assert run.returncode == 0, run.stderr
    shown = json.loads(hone_cli("show", "restarts", "--json").stdout)
    starts = (hone_home / "work" / "restarts" / "starts").read_text().count("started")
    result = shown["study"]["attrs"]["result"]
    assert 0 < result["elapsed"] < 300  # seconds since the run began, not since the boot
    return result, shown["trials"], starts


def test_confirmation_rounds_of_a_warmed_up_workload_save_restarts(
    hone_cli, hone_home: Path, tmp_path: Path
) -> None:
    result, trials, starts = _study(hone_cli, hone_home, _project(tmp_path, warmup=True))
    restarts = result["restarts"]
    assert sum(restarts.values()) == starts  # the record counts every real start
    assert restarts["baseline"] == 1  # the baseline runs share one start
    confirm = [t for t in trials if t["phase"] == "confirm"]
    rounds: dict[int, list[str]] = defaultdict(list)
    for trial in confirm:
        rounds[trial["round"]].append(trial["config"]["mode"] + trial["config"]["tag"])
    assert len(rounds) >= 2
    for number in range(1, len(rounds)):  # a snake: each round reverses the one before
        assert rounds[number] == rounds[number - 1][::-1]
    # a round that starts with the configuration running needs no restart for it
    assert restarts.get("confirm", 0) <= len(confirm) - (len(rounds) - 1)
    modes = [mode[0] for mode in rounds[0]]  # readings sharing the restart knob side by side
    assert all(m not in modes[:n] or modes[n - 1] == m for n, m in enumerate(modes))
    # a restart exactly when the restart knob changed from the reading before
    search = [t["config"]["mode"] for t in trials if t["phase"] == "search"]
    sequence = [search[-1]] + [t["config"]["mode"] for t in confirm]
    assert restarts.get("confirm", 0) == sum(a != b for a, b in itertools.pairwise(sequence))
    assert f"workload restarts: {starts} (baseline 1" in hone_cli("show", "restarts").stdout


def test_without_a_warmup_every_confirmation_reading_follows_a_restart(
    hone_cli, hone_home: Path, tmp_path: Path
) -> None:
    result, trials, starts = _study(hone_cli, hone_home, _project(tmp_path, warmup=False))
    assert sum(result["restarts"].values()) == starts
    confirm = [t for t in trials if t["phase"] == "confirm"]
    lineups = {t["round"]: [] for t in confirm}
    for trial in confirm:
        lineups[trial["round"]].append(trial["config"]["mode"])
    assert all(lineup == lineups[0] for lineup in lineups.values())  # the same fixed order
    changed = [a != b for a, b in zip(lineups[0], lineups[0][1:] + lineups[0][:1], strict=True)]
    # every reading whose restart knob differs from the one before it restarted the workload
    assert result["restarts"]["confirm"] >= sum(changed) * (len(lineups) - 1)


def test_a_stop_waits_for_every_process_the_workload_started(tmp_path: Path) -> None:
    """A server's child in its own session that ignores SIGTERM outlives the server's first
    process: the stop waits for it, and kills it after the timeout."""
    script = "setsid sh -c 'trap \"\" TERM; echo $$ > child; exec sleep 60' & exec sleep 60"
    workload = Workload(launch=LaunchSpec(["sh", "-c", script]), ready_timeout=1)
    manager = WorkloadManager(workload, tmp_path, tmp_path)
    manager.start()
    deadline = time.monotonic() + 5
    while not (tmp_path / "child").exists() or not (tmp_path / "child").read_text().strip():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.2)  # the child has exec'd sleep and ignores SIGTERM
    child = int((tmp_path / "child").read_text())
    started = time.monotonic()
    try:
        manager.stop()
        assert time.monotonic() - started >= 0.9  # it waited for the child ...
        state = Path(f"/proc/{child}/stat")
        assert not state.exists() or state.read_text().split(") ")[1][0] in "ZX"  # ... killed it
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)


def test_a_stop_command_past_its_time_says_which_limit_ran_out(tmp_path: Path) -> None:
    """A stop command silent until killed at the limit: the reason names the seconds and the
    setting that bounds it, not an empty tail after a colon."""
    workload = Workload(start="true", stop="sleep 5", ready_timeout=0.5)
    with pytest.raises(BenchmarkError) as failed:
        WorkloadManager(workload, tmp_path, tmp_path).stop()
    assert str(failed.value) == (
        "workload stop failed (timed out after 0.5s, the workload's ready_timeout)"
    )


def test_a_workload_that_never_became_ready_is_stopped(
    tmp_path: Path, hone_cli, hone_home: Path
) -> None:
    """nginx answering 403 to its ready probe: the run stopped with 'not ready', and the server
    it had started was left running (the stop was skipped: no start had succeeded)."""
    (tmp_path / "hone.yaml").write_text(
        textwrap.dedent("""\
        name: never-ready
        workload:
          start: sleep 300 > /dev/null 2>&1 & echo $! > "$HONE_WORKDIR/pid"
          stop: if [ -f "$HONE_WORKDIR/pid" ]; then kill "$(cat "$HONE_WORKDIR/pid")"; fi
          ready: "false"
          ready_timeout: 1
        knobs:
          tag:
            type: categorical
            values: [x, y]
            shell: {get: echo x, set: "true"}
        benchmark: {command: echo "ops 1"}
        metrics: {ops: {pattern: 'ops ([0-9]+)', direction: maximize}}
        tuning: {budget: 2, baseline: 1}
        """)
    )
    run = hone_cli("tune", str(tmp_path), "--no-why")
    assert run.returncode != 0 and "not ready after 1s (ready command: exit 1)" in run.stderr
    work = hone_home / "work" / "never-ready"
    pid = int((work / "pid").read_text())
    assert _gone(pid), f"sleep {pid} still runs"


def _gone(pid: int, seconds: float = 5.0) -> bool:
    """The process exited (gone, or a zombie not yet reaped) within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.1)
    return False


def test_a_winner_applied_at_the_end_does_not_restart_the_server_hone_stops(
    tmp_path: Path,
) -> None:
    (tmp_path / "level.txt").write_text("1\n")
    (tmp_path / "hone.yaml").write_text(
        textwrap.dedent("""\
        name: end-restart
        workload:
          process:
            command: [sh, -c, 'echo "$THREADS" >> starts.log; exec sleep 600']
        knobs:
          threads: {type: int, range: [1, 4], default: 1, env: THREADS}
          level:
            type: int
            range: [1, 9]
            shell: {get: cat level.txt, set: 'echo "$value" > level.txt'}
        benchmark:
          command: echo "score $(cat level.txt)"
          warmup: true
        metrics: {score: {pattern: 'score ([0-9]+)', direction: maximize}}
        tuning:
          engine: random
          budget: 2
          baseline: 1
          apply: always
          confirm: {candidates: 2, rounds: 2}
          # the winner (level 9) is confirmed first in each round, the other candidate last
          start: [{threads: 2, level: 9}, {threads: 3, level: 5}]
        """)
    )
    project = load_project(tmp_path / "hone.yaml")
    result = Tuner(project, Reporter(), TuneOptions(why=False, max_repeats=2)).run()
    assert result.outcome == "applied" and result.best == {"threads": 2, "level": 9}
    assert (tmp_path / "level.txt").read_text() == "9\n"  # the winner's knobs are set
    # ... and the server, stopped right after, was not started again for them (with its
    # warm-up run): the last start is the other candidate's
    assert "end" not in result.restarts
    assert (tmp_path / "starts.log").read_text().splitlines()[-1] == "3"
