"""`-o` into a folder that does not exist is one line naming the folder, exit code 2, and
nothing is created, for every command that has it: `hone report` and `hone diagnose` used to
create the missing folders, `hone train` too, and `hone convert` named the file with "No such
file or directory". hone creates its own folders, never the user's: a typo in a path would
put the output somewhere nobody looks."""

from __future__ import annotations

from pathlib import Path

import pytest

from hone.analyze.dataset import BUILTIN_DATA
from hone.storage import StudyStore

ROOT = Path(__file__).resolve().parents[2]
DATA = [str(BUILTIN_DATA / "compute--gcc-1.csv.gz"), str(BUILTIN_DATA / "web--nginx-1.csv.gz")]


@pytest.mark.parametrize(
    ("command", "name", "after"),
    [
        (["report", "study"], "r.html", []),
        (["convert", str(ROOT / "examples" / "atune" / "compress")], "hone.yaml", []),
        (["collect", "-n", "1", "-i", "0.1"], "run.csv", []),
        (["train", *DATA], "model.pkl", []),
        (["diagnose"], "r.html", ["--", "true"]),  # a report file
        (["diagnose"], "rep", ["--", "true"]),  # a report folder: made, in a folder that exists
    ],
)
def test_output_into_a_missing_folder_is_one_line_naming_it(
    tmp_path: Path, hone_run, command: list[str], name: str, after: list[str]
) -> None:
    StudyStore(None).create("study", {"state": "finished"})
    missing = tmp_path / "typo" / "deeper"
    line = hone_run(*command, "-o", str(missing / name), *after).one_line()
    assert line == f"hone: {missing / name}: no folder {missing}"
    assert list(tmp_path.iterdir()) == []


def test_a_report_folder_is_made_in_a_folder_that_exists(tmp_path: Path, hone_run) -> None:
    ran = hone_run("diagnose", "--no-offcpu", "--no-locks", "-o", str(tmp_path / "rep"), "--",
                   "sleep", "1.5")  # fmt: skip
    assert ran.code == 0, ran.stderr
    assert (tmp_path / "rep" / "diagnosis.hone").is_file()


def test_dash_is_standard_output_never_a_file_named_dash(
    tmp_path: Path, hone_run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`hone convert ... -o -` and `hone report NAME -o -` wrote a file named `-` in the current
    folder (convert saying nothing), where `hone collect -o -` writes to standard output. Now
    they write there too; a model or a diagnosis, which are not text, say so."""
    monkeypatch.chdir(tmp_path)
    StudyStore(None).create("study", {"state": "finished"})
    converted = hone_run("convert", str(ROOT / "examples" / "atune" / "compress"), "-o", "-")
    assert converted.code == 0 and "knobs:" in converted.stdout, converted.stderr
    reported = hone_run("report", "study", "-o", "-")
    assert reported.code == 0 and reported.stdout.startswith("<!doctype html>"), reported.stderr
    line = hone_run("train", *DATA, "-o", "-").one_line()
    assert line == "hone: -o -: a model is not written to standard output: name a file or folder"
    assert "-o -: a diagnosis" in hone_run("diagnose", "-o", "-", "--", "true").one_line()
    assert list(tmp_path.iterdir()) == []
