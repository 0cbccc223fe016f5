"""`hone collect` refuses what would collect nothing, or collect zeros for a device that is
not there, instead of ending with exit code 0."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("args", [("-n", "0"), ("-d", "0"), ("-d", "-1")])
def test_collect_refuses_nothing_to_collect(args: tuple[str, str], hone_run) -> None:
    line = hone_run("collect", *args).one_line()
    assert "--count" in line or "--duration" in line


@pytest.mark.parametrize("command", ["collect", "analyze"])
def test_an_interval_past_a_day_is_one_line(command: str, hone_run) -> None:
    """`-i 1e10` slept past what Python's sleep can count: an OverflowError traceback after
    the first reading."""
    line = hone_run(command, "-i", "1e10", "-d", "1e11").one_line()
    assert line == "hone: --interval must be above 0 and at most 86400 seconds (a day), not 1e+10"


@pytest.mark.parametrize("flag", ["--disk", "--network"])
def test_collect_refuses_a_device_this_machine_lacks(flag: str, hone_run) -> None:
    line = hone_run("collect", flag, "no-such-device", "-n", "1").one_line()
    assert line.startswith(f"hone: {flag} 'no-such-device': no such")


def test_collect_keeps_an_existing_csv(tmp_path, hone_run) -> None:
    earlier = tmp_path / "web.csv"
    earlier.write_text("CPU.STAT.util,workload.type,workload.appname\n50,web,nginx\n")
    line = hone_run("collect", "-n", "1", "-i", "0.1", "-o", str(earlier)).one_line()
    assert line == f"hone: {earlier}: exists: write to a new file (or remove this one)"
    assert earlier.read_text().endswith("50,web,nginx\n")


def test_the_live_view_into_a_pipe_keeps_whole_columns(hone_run, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    ran = hone_run("collect", "--live", "-n", "2", "-i", "0.2")
    assert ran.code == 0, ran.stderr
    assert "iowait" in ran.stdout and "…" not in ran.stdout


def test_live_and_json_are_not_given_together(hone_run) -> None:
    line = hone_run("collect", "--live", "--json", "-n", "1").one_line()
    assert line == "hone: --live draws a view, --json writes samples: give one of them"


def test_json_and_csv_on_stdout_are_not_given_together(hone_run) -> None:
    """`--json -o -` wrote the CSV to stdout and dropped --json without a word."""
    ran = hone_run("collect", "--json", "-o", "-", "-n", "1", "-i", "0.1")
    assert ran.one_line() == "hone: --json and -o - both write to stdout: give one of them"
    assert ran.stdout == ""


def test_serve_refuses_options_it_would_ignore(hone_run) -> None:
    assert "--serve runs alone" in hone_run("collect", "--serve", "--json").one_line()
