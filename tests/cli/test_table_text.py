"""Tables print the user's text as given: Rich read `[compress]` in an INI knob's
`config(settings.conf: [compress] level)` as a markup tag and dropped it, and would drop a
value such as THP's `always [madvise] never` the same way."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from hone.output import DataTable

ROOT = Path(__file__).resolve().parents[2]


def test_check_shows_the_section_of_an_ini_knob(hone_run) -> None:
    ran = hone_run("check", str(ROOT / "examples" / "compress"))
    assert ran.code == 0, ran.stderr
    assert "config(settings.conf: [compress] level)" in ran.stdout


def test_a_cell_with_brackets_is_printed_whole() -> None:
    table = DataTable("knob", "value")
    table.add_row("transparent_hugepage", "always [madvise] never")
    console = Console(width=200, record=True)
    console.print(table)
    assert "always [madvise] never" in console.export_text()


def test_check_prints_a_benchmark_with_a_character_class_whole(tmp_path: Path, hone_run) -> None:
    text = (ROOT / "examples" / "compress" / "hone.yaml").read_text()
    command = "python3 compress.py | grep -E '[a-z]+: [0-9.]+'"
    (tmp_path / "hone.yaml").write_text(
        text.replace("command: python3 compress.py", f'command: "{command}"')
    )
    ran = hone_run("check", str(tmp_path / "hone.yaml"))
    assert ran.code == 0, ran.stderr
    assert f"benchmark: {command}" in ran.stdout


def test_profile_info_prints_a_name_with_brackets_whole(tmp_path: Path, hone_run) -> None:
    source = tmp_path / "mine.ini"
    source.write_text("[sysctl]\nvm.swappiness = 12\n")
    assert hone_run("profile", "define", "web[x]", str(source)).code == 0
    header = hone_run("profile", "info", "web[x]").stdout.splitlines()[0]
    assert header.startswith("profile web[x] (") and header.endswith("web[x].conf)")
