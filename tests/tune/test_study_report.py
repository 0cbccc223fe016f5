"""`hone report`: the chart reads like the numbers people write, and shows the baseline's noise."""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from forked_hone import run_hone

from hone.output import number
from hone.report.svg import ticks

# A server-sized figure (about 50,000 requests per second) with a few per cent of noise.
PROJECT = """\
name: report-figures
knobs:
  workers:
    type: int
    range: [1, 8]
    shell: {get: "cat workers", set: "printf '%s' $value > workers"}
benchmark:
  command: 'echo "rps: $((50000 + $(cat workers) * 300 + $(od -An -N2 -tu2 /dev/urandom) % 2500))"'
metrics:
  rps: {pattern: 'rps: (\\d+)', direction: maximize, unit: rps}
tuning: {budget: 5, baseline: 3, confirm: {candidates: 1, rounds: 2}, apply: never}
"""


@dataclass
class Figures:
    """The PROJECT study, tuned once for the tests that only read it: its `hone tune` output,
    its `hone report` page, and `hone` with its state folder."""

    tuned: str
    html: str
    cli: Callable[..., subprocess.CompletedProcess]


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> Figures:
    home = tmp_path_factory.mktemp("figures-home")
    folder = tmp_path_factory.mktemp("figures")
    project = folder / "p"
    project.mkdir()
    (project / "hone.yaml").write_text(textwrap.dedent(PROJECT))
    (project / "workers").write_text("1")

    def cli(*args: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "HONE_HOME": str(home), "COLUMNS": "200"}
        return run_hone(*args, env=env, cwd=Path.cwd(), timeout=300)

    tuned = cli("tune", str(project), "--no-why")
    assert tuned.returncode == 0, tuned.stderr
    out = folder / "r.html"
    assert cli("report", "report-figures", "-o", str(out)).returncode == 0
    return Figures(tuned.stdout, out.read_text(), cli)


def test_the_chart_has_round_labels_and_the_baseline_band(figures: Figures) -> None:
    html = figures.html
    chart = html[html.index("<svg") : html.index("</svg>")]
    labels = re.findall(r'text-anchor="end">([^<]+)</text>', chart)
    # '5.04e+04' and '5.152e+04' before; now thousands as people write them, in round steps
    assert labels and all(re.fullmatch(r"\d{2},\d{3}", label) for label in labels), labels
    assert "e+0" not in chart
    # the baseline band: mean ± 2 SD of the three baseline runs, a band, not a hairline
    band = re.search(r'<rect [^>]*height="([\d.]+)" class="band">', chart)
    assert band and float(band[1]) > 2, chart[:600]
    assert "baseline ± 2 SD" in chart
    # the summary says the baseline's noise and unit, as `hone show` does
    assert re.search(r"rps=\d\d,\d{3} rps \(noise CV \d+\.\d %\)", html)
    assert "confirm r1" in html and "confirm r2" in html


def test_the_gain_names_the_baseline_it_was_measured_against(figures: Figures) -> None:
    # compress: baseline 1.77 MB/s (its phase), best 21.15, gain +1576 %: the gain compares
    # the best with the baseline measured in the same confirmation rounds (1.27), which no
    # output showed, so the three figures did not add up.
    shown = json.loads(figures.cli("show", "report-figures", "--json").stdout)
    base = next(t["config"] for t in shown["trials"] if t["phase"] == "baseline")
    rounds = [
        t["metrics"]["rps"]
        for t in shown["trials"]
        if t["phase"] == "confirm" and t["config"] == base and t["state"] == "complete"
    ]
    result = shown["study"]["attrs"]["result"]
    assert result["confirm_baseline_metrics"]["rps"] == pytest.approx(statistics.fmean(rounds))
    line = f"baseline in the same rounds: rps={number(statistics.fmean(rounds))} rps"
    assert line in figures.tuned
    assert line in figures.cli("show", "report-figures").stdout
    html = figures.html
    assert f"baseline in the same rounds</th><td>rps={number(statistics.fmean(rounds))} rps" in html


def test_ticks_are_round_and_cover_the_range() -> None:
    assert ticks(50400, 51520) == [50000, 50500, 51000, 51500, 52000]
    assert ticks(0.483, 28.9) == [0, 10, 20, 30]
    assert ticks(1, 20, whole=True) == [0, 5, 10, 15, 20]
    assert ticks(1, 3, whole=True) == [1, 2, 3]
    assert ticks(0.12, 0.31) == [0.1, 0.15, 0.2, 0.25, 0.3, 0.35]


def test_a_time_to_minimise_is_plotted_as_a_time(tmp_path: Path, hone_cli) -> None:
    # examples/gcc-flags: its chart showed a "score" of -0.25 to -0.1, higher is better
    project = tmp_path / "p"
    project.mkdir()
    (project / "hone.yaml").write_text(
        textwrap.dedent("""\
        name: report-time
        knobs:
          level:
            type: int
            range: [1, 8]
            shell: {get: "cat level", set: "printf '%s' $value > level"}
        benchmark:
          command: 'echo "seconds: 0.$((30 - $(cat level) * 2))$(od -An -N1 -tu1 /dev/urandom)"'
        metrics:
          seconds: {pattern: 'seconds: ([0-9.]+)', direction: minimize, unit: s}
        tuning: {budget: 4, baseline: 3, confirm: {candidates: 1, rounds: 2}, apply: never}
        """)
    )
    (project / "level").write_text("1")
    assert hone_cli("tune", str(project), "--no-why").returncode == 0
    out = tmp_path / "r.html"
    assert hone_cli("report", "report-time", "-o", str(out)).returncode == 0
    chart = out.read_text().split("<svg", 1)[1].split("</svg>", 1)[0]
    assert "seconds per trial and best so far (lower is better)" in chart
    assert ">seconds (s)</text>" in chart
    labels = re.findall(r'text-anchor="end">([^<]+)</text>', chart)
    assert labels and not any(label.startswith("-") for label in labels), labels
    best = [float(y) for y in re.findall(r"<title>best so far #\d+: ([\d.]+)</title>", chart)]
    assert best and best == sorted(best, reverse=True)  # the best so far only falls
    assert 'class="band">' in chart


def test_a_wide_study_stays_within_an_800_px_window(tmp_path: Path, hone_cli) -> None:
    # redis's five knobs and two metrics made the trial table 867 px wide: the page scrolled
    from playwright.sync_api import sync_playwright

    from benchmarks.web import launch

    names = [f"io_threads_do_reads_{i}" for i in range(6)]
    knobs = "".join(
        f'  {n}:\n    type: categorical\n    values: ["no", "yes"]\n'
        f'    shell: {{get: echo no, set: "true"}}\n'
        for n in names
    )
    project = tmp_path / "p"
    project.mkdir()
    (project / "hone.yaml").write_text(
        "name: report-wide\nknobs:\n"
        + knobs
        + textwrap.dedent("""\
        benchmark:
          command: 'echo "get_rps: 4$(od -An -N2 -tu2 /dev/urandom) set_rps: 41234"'
        metrics:
          get_rps: {pattern: 'get_rps: *(\\d+)', direction: maximize}
          set_rps: {pattern: 'set_rps: (\\d+)', direction: maximize}
        tuning: {budget: 3, baseline: 2, confirm: {candidates: 1, rounds: 2}, apply: never}
        """)
    )
    assert hone_cli("tune", str(project), "--no-why").returncode == 0
    out = tmp_path / "r.html"
    assert hone_cli("report", "report-wide", "-o", str(out)).returncode == 0
    with sync_playwright() as playwright:
        context = launch(playwright, str(tmp_path / "profile"), width=800, height=900)
        page = context.new_page()
        page.goto(out.as_uri())
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 800
        wrap = page.evaluate("getComputedStyle(document.querySelector('td.p')).whiteSpace")
        context.close()
    assert wrap == "nowrap"  # a phase such as 'confirm r1' on one line


def test_a_full_disk_keeps_the_old_report_whole(figures: Figures, small_disk) -> None:
    """The page is written beside its path and renamed over it: a disk that fills up mid-write
    leaves the report that was there, not half a page, and says so in one line."""
    disk = small_disk("4k")
    old = disk / "r.html"
    old.write_text("<p>the report of yesterday</p>\n")
    written = figures.cli("report", "report-figures", "-o", str(old), "--force")
    assert written.returncode == 2, written.stderr
    assert "Traceback" not in written.stderr
    assert len(written.stderr.strip().splitlines()) == 1, written.stderr
    assert str(old) in written.stderr
    assert old.read_text() == "<p>the report of yesterday</p>\n"
    assert [p.name for p in disk.iterdir()] == ["r.html"]


def test_a_file_that_is_no_report_is_kept_without_force(figures: Figures, tmp_path: Path) -> None:
    """`hone report NAME -o hone.yaml` (a slip of the tab key) replaced the project file with
    the page, silently; -o of convert, collect and train keep an existing file. A report
    written before is still replaced: that is the report of a study that went on."""
    project = tmp_path / "hone.yaml"
    project.write_text(textwrap.dedent(PROJECT))
    refused = figures.cli("report", "report-figures", "-o", str(project))
    assert refused.returncode == 2
    assert (
        refused.stderr
        == f"hone: {project}: exists: give --force to replace it, or write elsewhere\n"
    )
    assert project.read_text() == textwrap.dedent(PROJECT)

    assert figures.cli("report", "report-figures", "-o", str(project), "--force").returncode == 0
    assert project.read_text() == figures.html
    project.write_text(figures.html.replace("report-figures", "an older study"))
    # a report written before is replaced without --force
    assert figures.cli("report", "report-figures", "-o", str(project)).returncode == 0
    assert project.read_text() == figures.html
