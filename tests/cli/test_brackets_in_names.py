"""Knob, metric and project names are the user's text, brackets included: Rich read
`latency[p99]` in a line as a style and printed `latency=5`, and `x[/y]` as a closing tag
that ended `hone show`, `hone restore` and a tune's progress bar in a traceback."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

from rich.console import Console

from hone.tune.console import RichReporter

PROJECT = """\
    name: brackets
    knobs:
      "x[/y]":
        type: int
        range: [1, 3]
        config: {file: s.conf, format: ini, section: s, key: x, restart: false}
    benchmark: {command: "echo lat 5"}
    metrics:
      "latency[p99]": {pattern: 'lat (\\d+)', direction: minimize, unit: "[ms]"}
    tuning: {budget: 2, baseline: 2}
    """


def test_tune_and_show_print_bracketed_names_whole(tmp_path: Path, hone_cli) -> None:
    (tmp_path / "s.conf").write_text("[s]\nx = 1\n")
    (tmp_path / "hone.yaml").write_text(textwrap.dedent(PROJECT))
    tuned = hone_cli("tune", str(tmp_path))
    assert tuned.returncode == 0, tuned.stderr
    assert "baseline (2 runs): latency[p99]=5 [ms]  noise CV" in tuned.stdout
    assert "trial 1/2: x[/y]=" in tuned.stdout and "-> latency[p99]=5 [ms] (" in tuned.stdout
    shown = hone_cli("show", "brackets")
    assert shown.returncode == 0, shown.stderr
    assert "baseline: latency[p99]=5 [ms] (noise CV" in shown.stdout
    assert "┃ x[/y] ┃ latency[p99] ┃" in shown.stdout


def test_restore_names_a_project_with_brackets(hone_run) -> None:
    ran = hone_run("restore", "x[/y]")
    assert ran.code == 0, ran.stderr
    assert ran.stdout == (
        "nothing to restore for x[/y]: no recorded changes "
        "(no run of a project of that name here: `hone studies` lists them)\n"
    )


def test_the_progress_bar_shows_the_best_with_its_metric_names() -> None:
    """On a terminal the bar shows the best so far, metric names and all."""
    screen = io.StringIO()
    reporter = RichReporter(Console(file=screen, force_terminal=True, markup=False, width=120))
    reporter.best_score, reporter.best_metrics = 5.0, {"latency[/p99]": 5.0}
    reporter.progress.start()
    reporter.phase("search", 2)
    reporter.stop()
    assert "best latency[/p99]=5" in screen.getvalue()
