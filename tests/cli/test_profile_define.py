"""`hone profile define/update` name the user's file and its line, not hone's copy of it,
and refuse an empty file instead of defining a profile that changes nothing."""

from __future__ import annotations

from pathlib import Path


def test_a_file_without_sections_names_its_line(tmp_path: Path, hone_run) -> None:
    source = tmp_path / "mine.ini"
    source.write_text("name: x\n")
    line = hone_run("profile", "define", "mine", str(source)).one_line()
    assert line == (
        f"hone: {source}:1: cannot read profile: File contains no section headers: 'name: x'"
    )


def test_an_empty_file_is_refused_and_the_old_profile_kept(tmp_path: Path, hone_run) -> None:
    good, empty = tmp_path / "good.ini", tmp_path / "empty.ini"
    good.write_text("[sysctl]\nvm.swappiness = 12\n")
    empty.write_text("# nothing yet\n")
    line = hone_run("profile", "define", "other", str(empty)).one_line()
    assert line.startswith(f"hone: {empty}: no settings")
    assert hone_run("profile", "define", "mine", str(good)).code == 0
    assert hone_run("profile", "update", "mine", str(empty)).one_line().startswith(f"hone: {empty}")
    shown = hone_run("profile", "info", "mine", "--json")
    assert "vm.swappiness" in shown.stdout and "other" not in hone_run("profile", "list").stdout
