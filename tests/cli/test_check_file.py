"""`hone check FILE` says what is wrong with a single file as `hone tune` does: an empty
file is called empty, and a hone project missing a key names the key; both were "not a hone
project nor an A-Tune server or client file"."""

from __future__ import annotations

from pathlib import Path


def test_an_empty_file_is_called_empty(tmp_path: Path, hone_run) -> None:
    empty = tmp_path / "hone.yaml"
    empty.write_text("# nothing yet\n")
    assert (
        hone_run("check", str(empty)).one_line() == f"hone: {empty}: empty file: no project in it"
    )


def test_a_project_missing_a_key_names_it(tmp_path: Path, hone_run) -> None:
    project = tmp_path / "hone.yaml"
    project.write_text("name: web\n")
    line = hone_run("check", str(project)).one_line()
    assert line == f"hone: {project}:1: missing required key 'knobs'"


def test_other_yaml_is_still_not_a_project(tmp_path: Path, hone_run) -> None:
    other = tmp_path / "topo.yaml"
    other.write_text("global:\n  user: tidb\n")
    line = hone_run("check", str(other)).one_line()
    assert line.endswith("not a hone project nor an A-Tune server or client file")


def test_a_symlink_to_nothing_is_not_called_missing(tmp_path: Path, hone_run) -> None:
    """`no such file or folder` for a link that is there sent the user looking for a typo."""
    dangling = tmp_path / "hone.yaml"
    dangling.symlink_to(tmp_path / "gone" / "hone.yaml")
    line = hone_run("check", str(dangling)).one_line()
    assert line == f"hone: {dangling}: a symlink to {tmp_path}/gone/hone.yaml, which does not exist"
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(tmp_path / "back.yaml")
    (tmp_path / "back.yaml").symlink_to(loop)
    assert hone_run("check", str(loop)).one_line() == (
        f"hone: {loop}: a symlink that loops back on itself"
    )
