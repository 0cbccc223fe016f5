"""Output read through a pipe, as `hone show NAME | less` or `hone tune ... > log` read it:
whole lines and whole cells (no 80-column wrapping, no `cach…`), numbers as people write them."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

from forked_hone import run_hone
from started_hone import start_hone

MODE = "compression-level-maximum-with-a-dictionary"


def project(tmp_path: Path) -> Path:
    (tmp_path / "mode.txt").write_text("plain\n")
    (tmp_path / "bench.py").write_text(
        textwrap.dedent("""\
        mode = open("mode.txt").read().strip()
        print("operations per second:", 153300.0 if mode == "plain" else 171250.25)
        """)
    )
    (tmp_path / "hone.yaml").write_text(
        textwrap.dedent(f"""\
        name: a-project-with-a-rather-long-name-for-a-narrow-terminal
        knobs:
          mode:
            type: categorical
            values: [plain, {MODE}]
            config: {{file: mode.txt, format: regex, pattern: '^(.*)$', restart: false}}
        benchmark: {{command: python3 bench.py, timeout: 20}}
        metrics:
          tps: {{pattern: 'second: (\\S+)', direction: maximize, unit: ops/s}}
        tuning: {{engine: gridsearch, budget: 2, baseline: 2, apply: never, seed: 1,
                  confirm: {{candidates: 1, rounds: 2}}}}
        """)
    )
    return tmp_path


def piped(home: Path, *args: str) -> str:
    """What `hone ARGS` writes to its stdout and stderr, both pipes (then stderr after)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    result = run_hone(*args, env={**env, "HONE_HOME": str(home)}, cwd=Path.cwd(), timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def test_output_through_a_pipe_keeps_whole_lines_cells_and_readable_numbers(
    tmp_path: Path, hone_home: Path
) -> None:
    folder = project(tmp_path)
    tuned = piped(hone_home, "tune", str(folder))
    shown = piped(hone_home, "show", "a-project-with-a-rather-long-name-for-a-narrow-terminal")
    listed = piped(hone_home, "studies")
    for text in (tuned, shown, listed):
        assert "…" not in text
    # a trial line is one line, with the whole value and the number written out
    trial = next(line for line in tuned.splitlines() if MODE in line and "trial" in line)
    assert "tps=171,250 ops/s" in trial, trial
    assert "tps=153,300 ops/s" in shown  # the baseline line of `hone show`, with its unit
    assert "153,300" in tuned and "e+05" not in tuned + shown
    rows = [line for line in shown.splitlines() if MODE in line and line.startswith("│")]
    assert rows and all("171,250" in row for row in rows)
    assert "a-project-with-a-rather-long-name-for-a-narrow-terminal#1" in listed


def test_help_through_a_pipe_gives_each_option_one_whole_line(hone_home: Path) -> None:
    tune = piped(hone_home, "tune", "--help")
    line = next(line for line in tune.splitlines() if "--min-detectable" in line)
    assert line.rstrip().endswith("rounds raised or stop"), line  # Rich cut it after "rounds"
    assert "╭" not in tune and "│" not in tune
    top = piped(hone_home, "--help")
    restore = next(line for line in top.splitlines() if line.strip().startswith("restore"))
    assert restore.rstrip().endswith("(on every host of a cluster project)."), restore
    remote = piped(hone_home, "remote", "--help")
    assert any(line.strip().startswith("--token-file") for line in remote.splitlines())


def test_a_closed_output_stops_the_run_and_says_so(tmp_path: Path, hone_home: Path) -> None:
    """`hone tune ... | head -1`: once head has gone, Rich ended hone with a silent exit code
    1, which said nothing of the knobs (they were put back). Now one line on stderr says the
    run stopped and that every knob is back, and the exit code is a SIGPIPE death's."""
    (tmp_path / "level.txt").write_text("5\n")
    (tmp_path / "hone.yaml").write_text(
        textwrap.dedent("""\
        name: closed-output
        knobs:
          level: {type: int, range: [1, 9], config: {file: level.txt, format: regex,
                  pattern: '^(.*)$', restart: false}}
        benchmark: {command: 'sleep 0.2; echo "score: $(cat level.txt)"', timeout: 20}
        metrics: {score: {pattern: 'score: (\\S+)', direction: maximize}}
        tuning: {engine: random, budget: 20, baseline: 2, seed: 1}
        """)
    )
    env = {**os.environ, "HONE_HOME": str(hone_home)}
    proc = start_hone("tune", str(tmp_path), "--no-why", env=env, stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith("hone tune closed-output:")
    proc.stdout.close()  # as head does once it has its line
    assert proc.wait(timeout=60) == 141
    assert proc.stderr.read().splitlines() == [
        "hone: stopped: its output was closed (broken pipe); every knob put back"
    ]
    assert (tmp_path / "level.txt").read_text() == "5\n"
