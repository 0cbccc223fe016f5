"""Files hone is told to write and study databases it cannot open: one line, exit code 2."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from hone.project import load_project

ROOT = Path(__file__).resolve().parents[2]
ATUNE = ROOT / "examples" / "atune" / "compress"


def test_output_into_a_folder_is_one_line(tmp_path: Path, hone_run) -> None:
    line = hone_run("convert", str(ATUNE), "-o", str(tmp_path)).one_line()
    assert line == f"hone: {tmp_path}: Is a directory"


def test_output_under_a_missing_folder_is_one_line(tmp_path: Path, hone_run) -> None:
    target = tmp_path / "none" / "x.yaml"
    line = hone_run("convert", str(ATUNE), "-o", str(target)).one_line()
    assert line == f"hone: {target}: no folder {target.parent}"  # the folder that is missing


def test_a_database_that_cannot_be_opened_is_one_line(tmp_path: Path, hone_run) -> None:
    (tmp_path / "garbage.db").write_text("not a database")
    url = f"sqlite:///{tmp_path / 'garbage.db'}"
    line = hone_run("studies", "--storage", url).one_line()
    assert "file is not a database" in line and "sqlalche.me" not in line
    assert "`hone restore PROJECT` works without this file" in line  # what to do about it


def test_convert_refuses_to_write_over_the_file_it_converts(tmp_path: Path, hone_run) -> None:
    folder = tmp_path / "compress"
    shutil.copytree(ATUNE, folder)
    server = next(folder.glob("*server*.yaml"))
    original = server.read_bytes()
    line = hone_run("convert", str(folder), "-o", str(server)).one_line()
    assert line == f"hone: {server}: is a file being converted: write the hone YAML elsewhere"
    assert server.read_bytes() == original


def test_convert_redirected_into_the_atune_folder_converts_the_pair(
    tmp_path: Path, hone_home: Path
) -> None:
    """`hone convert . > hone.yaml` in an A-Tune folder: the shell creates hone.yaml, empty,
    before hone runs; the A-Tune pair is what was asked for, and the file gets it (again, the
    same, when run a second time over a full hone.yaml)."""
    folder = tmp_path / "compress"
    shutil.copytree(ATUNE, folder)
    pair = load_project(folder)
    command = f"{shlex.quote(sys.executable)} -m hone convert . > hone.yaml"
    outputs = []
    for _ in range(2):
        ran = subprocess.run(
            command,
            shell=True,
            cwd=folder,
            capture_output=True,
            text=True,
            env={**os.environ, "HONE_HOME": str(hone_home)},
        )
        assert (ran.returncode, ran.stderr) == (0, ""), ran.stderr
        outputs.append((folder / "hone.yaml").read_text())
    assert outputs[0] == outputs[1]
    converted = load_project(folder)  # the folder's hone.yaml now
    assert converted.sources == [folder / "hone.yaml"]
    assert converted.name == pair.name and converted.space() == pair.space()


def test_a_missing_sqlite_file_is_not_created_by_a_reading_command(
    tmp_path: Path, hone_run
) -> None:
    typo = tmp_path / "studeis.db"
    for command in (["studies"], ["show", "x"], ["report", "x"]):
        line = hone_run(*command, "--storage", f"sqlite:///{typo}").one_line()
        assert line == f"hone: {typo}: no such study database"
    assert not typo.exists()


def test_convert_keeps_an_existing_project_unless_forced(tmp_path: Path, hone_run) -> None:
    """A converted project is edited afterwards: converting again over it would undo the edits."""
    target = tmp_path / "hone.yaml"
    target.write_text("# edited by hand\n")
    line = hone_run("convert", str(ATUNE), "-o", str(target)).one_line()
    assert line == f"hone: {target}: exists: give --force to replace it, or write elsewhere"
    assert target.read_text() == "# edited by hand\n"
    ran = hone_run("convert", str(ATUNE), "-o", str(target), "--force")
    assert ran.code == 0, ran.stderr
    assert target.read_text().startswith("name: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hone.yaml"]  # no temporary file left


def test_diagnose_keeps_an_earlier_diagnosis_at_its_output(tmp_path: Path, hone_run) -> None:
    """A measurement cannot be taken again: a new run into a folder (or next to a .html) that
    holds one is refused before it starts, unless --force."""
    folder = tmp_path / "before"
    folder.mkdir()
    (folder / "diagnosis.hone").write_bytes(b"an earlier run")
    (tmp_path / "r.hone").write_bytes(b"another earlier run")
    for output, saved in (
        (folder, folder / "diagnosis.hone"),
        (tmp_path / "r.html", tmp_path / "r.hone"),
    ):
        line = hone_run("diagnose", "-o", str(output), "--", "true").one_line()
        assert line == f"hone: {saved}: exists: give --force to replace it, or write elsewhere"
    assert (folder / "diagnosis.hone").read_bytes() == b"an earlier run"
    assert sorted(p.name for p in folder.iterdir()) == ["diagnosis.hone"]  # no run, no files
    assert (tmp_path / "r.hone").read_bytes() == b"another earlier run"
