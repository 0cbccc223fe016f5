"""The `hone` command line as a user runs it: the embedded default end to end, and bad input
answered with one line, exit code 2 and nothing changed."""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def copy_compress(tmp_path: Path) -> Path:
    target = tmp_path / "compress"
    shutil.copytree(ROOT / "examples" / "compress", target)
    return target


def test_embedded_default_tunes_shows_reports_and_restores(tmp_path: Path, hone_cli) -> None:
    project = copy_compress(tmp_path)
    original = (project / "settings.conf").read_text()
    # the planned three confirmation rounds at most: a close call on a busy machine went on to
    # ten rounds of the one-second lzma baseline, which nothing below looks at
    result = hone_cli("tune", str(project), "--budget", "8", "--seed", "2", "--max-repeats", "3")
    assert result.returncode == 0, result.stderr
    assert "baseline (3 runs)" in result.stdout and "gain in confirmation" in result.stdout
    shown = hone_cli("show", "compress")
    assert shown.returncode == 0
    assert "limit ratio >= 3.4 broken" in shown.stdout or "failed trial" not in shown.stdout
    assert "importance" in shown.stdout and "effect of the knobs that matter" in shown.stdout
    report = tmp_path / "report.html"
    assert hone_cli("report", "compress", "-o", str(report)).returncode == 0
    html = report.read_text()
    assert html.count("<circle") >= 8 and "<script" not in html
    assert "Effect of the knobs that matter" in html and "predicted score" in html
    studies = hone_cli("studies")
    assert "compress#1" in studies.stdout and "finished" in studies.stdout
    assert hone_cli("restore", "compress").returncode == 0
    assert (project / "settings.conf").read_text() == original


def one_line_error(result) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_bad_input_is_one_line_and_changes_nothing(tmp_path: Path, hone_cli) -> None:
    project = copy_compress(tmp_path)
    original = (project / "settings.conf").read_text()
    line = one_line_error(hone_cli("tune", str(project), "--engine", "simulated-annealing"))
    assert "unknown engine 'simulated-annealing'" in line

    text = (project / "hone.yaml").read_text()
    (project / "hone.yaml").write_text(text.replace("budget: 20", "budgte: 20"))
    line = one_line_error(hone_cli("tune", str(project)))
    assert "hone.yaml:" in line and "did you mean 'budget'" in line
    (project / "hone.yaml").write_text(text)

    (project / "hone.yaml").write_text(text.replace("python3 compress.py", "echo nothing"))
    line = one_line_error(hone_cli("tune", str(project), "--budget", "2"))
    assert "every baseline run failed" in line and "not found" in line
    assert (project / "settings.conf").read_text() == original


def test_a_knob_whose_get_fails(tmp_path: Path, hone_cli) -> None:
    (tmp_path / "hone.yaml").write_text(
        textwrap.dedent("""\
        name: broken-get
        knobs:
          x: {type: int, range: [1, 3], shell: {get: "cat /nonexistent/x", set: "true"}}
        benchmark: {command: "echo v 1"}
        metrics: {v: {pattern: 'v (\\\\d+)', direction: maximize}}
    """)
    )
    line = one_line_error(hone_cli("tune", str(tmp_path)))
    assert "get failed (exit 1)" in line and "No such file" in line
    # the project's file, line and key, as for every bad input (it used to name none of them)
    assert line.startswith(f"hone: {tmp_path / 'hone.yaml'}:3: shell: knob 'x': ")


def test_a_sysctl_the_kernel_lacks_names_the_project_line(tmp_path: Path, hone_cli) -> None:
    """A typo in a kernel parameter's name: `hone: net.core.somaxcon: cannot read: ...` named
    neither the project file nor the knob."""
    (tmp_path / "hone.yaml").write_text(
        textwrap.dedent("""\
        name: sysctl-typo
        knobs:
          backlog:
            type: int
            range: [128, 4096]
            sysctl: net.core.somaxcon
        benchmark: {command: "echo v 1"}
        metrics: {v: {pattern: 'v (\\\\d+)', direction: maximize}}
    """)
    )
    line = one_line_error(hone_cli("tune", str(tmp_path)))
    assert line == (
        f"hone: {tmp_path / 'hone.yaml'}:6: sysctl: knob 'backlog': net.core.somaxcon: "
        "cannot read: No such file or directory"
    )


def test_a_damaged_study_database_is_one_line(hone_home, hone_cli) -> None:
    """Attributes that are not JSON, a dropped table: exit 2 and one line, no traceback."""
    import sqlite3

    from hone.storage import StudyStore

    StudyStore().create("damaged", {"engine": "random"})
    database = sqlite3.connect(hone_home / "studies.db")
    database.execute("UPDATE study_user_attributes SET value_json = '{bad'")
    database.commit()
    for args in (("studies",), ("show", "damaged")):
        result = hone_cli(*args)
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith("hone: the study database cannot be used")
        assert len(result.stderr.strip().splitlines()) == 1
    database.execute("DROP TABLE studies")
    database.commit()
    result = hone_cli("studies")
    assert result.returncode in (0, 2) and "Traceback" not in result.stderr  # Optuna rebuilds it


def test_no_studies_is_said_not_drawn_as_an_empty_table(hone_cli, hone_home: Path) -> None:
    listed = hone_cli("studies")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout == f"no studies in sqlite:///{hone_home / 'studies.db'}\n"
    assert hone_cli("studies", "--json").stdout.strip() == "[]"


def test_config_knobs_without_a_workload_need_no_restart(tmp_path: Path, hone_cli) -> None:
    """The benchmark reads the file itself: there is nothing to restart, so `restart: false`
    is not needed; an explicit `restart: true` without a workload is still a mistake."""
    (tmp_path / "app.conf").write_text("level = 3\n")
    (tmp_path / "bench.py").write_text(
        "import re\nlevel = int(re.search(r'level = (\\d+)', open('app.conf').read())[1])\n"
        "print('score:', 10 - abs(level - 6))\n"
    )
    text = textwrap.dedent("""\
        name: no-workload
        knobs:
          level:
            type: int
            range: [1, 9]
            config: {file: app.conf, key: level}
        benchmark: {command: python3 bench.py, timeout: 20}
        metrics:
          score: {pattern: 'score: (\\S+)', direction: maximize}
        tuning: {engine: random, budget: 3, baseline: 1, apply: never, seed: 1}
        """)
    (tmp_path / "hone.yaml").write_text(text)
    assert hone_cli("check", str(tmp_path)).returncode == 0
    result = hone_cli("tune", str(tmp_path), "--no-why")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "app.conf").read_text() == "level = 3\n"
    (tmp_path / "hone.yaml").write_text(
        text.replace("key: level}", "key: level}\n    restart: true")
    )
    result = hone_cli("check", str(tmp_path))
    assert result.returncode == 2 and "no workload to restart" in result.stderr


def test_one_confirmation_round_and_a_metric_called_score_read_plainly(
    tmp_path: Path, hone_cli
) -> None:
    """One round has no spread: its detectable gain and its interval are infinite, which the
    run and `hone show` printed as `inf %`; and a metric named `score` gave `hone show` two
    columns called score."""
    (tmp_path / "app.conf").write_text("level = 3\n")
    (tmp_path / "bench.py").write_text(
        "import random, re\n"
        "level = int(re.search(r'level = (\\d+)', open('app.conf').read())[1])\n"
        "print('score:', 100 + 10 * level + random.random())\n"
    )
    text = textwrap.dedent("""\
        name: one-round
        knobs:
          level: {type: int, range: [1, 9], config: {file: app.conf, key: level}}
        benchmark: {command: python3 bench.py, timeout: 20}
        metrics:
          score: {pattern: 'score: (\\S+)', direction: maximize}
        tuning: {engine: random, budget: 3, baseline: 3, apply: never, seed: 1,
                 confirm: {candidates: 1, rounds: 1}}
        """)
    (tmp_path / "hone.yaml").write_text(text)
    tune = hone_cli("tune", str(tmp_path), "--no-why")
    assert tune.returncode == 0, tune.stderr
    show = hone_cli("show", "one-round")
    assert show.returncode == 0, show.stderr
    for output in (tune.stdout, show.stdout):
        assert not re.search(r"\binf\b", output), output
        assert "1 confirmation round confirms no gain (an interval needs 2 rounds)" in output
    header = next(line for line in show.stdout.splitlines() if "phase" in line and "┃" in line)
    columns = [cell.strip() for cell in header.strip("┃│ ").split("┃")]
    assert columns.count("score") == 1 and "score (metric)" in columns, columns
    assert (tmp_path / "app.conf").read_text() == "level = 3\n"


def test_a_benchmark_cut_off_by_its_own_timeout_says_so(tmp_path: Path, hone_cli) -> None:
    """redis's I/O threads busy-spin past `timeout 40 redis-benchmark ...`: the trial failed
    with `benchmark exited 124: ` (an empty tail after the colon) and no word of the limit."""
    (tmp_path / "w").write_text("1")
    (tmp_path / "hone.yaml").write_text(
        textwrap.dedent("""\
        name: own-timeout
        knobs:
          workers:
            type: int
            range: [1, 8]
            shell: {get: cat w, set: "printf '%s' $value > w"}
        benchmark:
          command: 'if [ $(cat w) -gt 4 ]; then timeout 0.2 sleep 5; else echo "rps: 1$(cat w)"; fi'
        metrics:
          rps: {pattern: 'rps: (\\d+)', direction: maximize}
        tuning: {budget: 2, baseline: 1, apply: never, start: [{workers: 8}]}
        """)
    )
    assert hone_cli("tune", str(tmp_path), "--no-why").returncode == 0
    shown = json.loads(hone_cli("show", "own-timeout", "--json").stdout)
    failed = [t for t in shown["trials"] if t["state"] == "fail"]
    assert failed and failed[0]["config"]["workers"] == 8
    assert failed[0]["error"] == "benchmark exited 124 (its `timeout` ran out)"
