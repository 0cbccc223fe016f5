"""`hone restore FOLDER` needs only the project's name: a project edited since into one that no
longer loads is restored by the name its file declares (it used to stop on the load error, exit
2, the knobs left at the applied values), and `hone restore NAME` restores that project even
where the working folder holds an unrelated folder of that name (it used to try to load that
folder as the project and stop)."""

from __future__ import annotations

from pathlib import Path

import yaml

PROJECT = {
    "name": "by-path",
    "knobs": {
        "level": {
            "type": "int",
            "range": [1, 9],
            "config": {"file": "app.conf", "key": "level", "restart": False},
        }
    },
    "benchmark": {"command": "sed -n 's/^level=/score: /p' app.conf", "timeout": 10},
    "metrics": {"score": {"pattern": r"score: (\S+)", "direction": "maximize"}},
    "tuning": {"engine": "gridsearch", "budget": 2, "baseline": 1, "apply": "always",
               "confirm": {"candidates": 1, "rounds": 1}},
}  # fmt: skip


def tuned(folder: Path, hone_cli) -> None:
    """A run that leaves its winner applied: app.conf no longer holds the original 5."""
    (folder / "app.conf").write_text("level=5\n")
    (folder / "hone.yaml").write_text(yaml.safe_dump(PROJECT))
    result = hone_cli("tune", str(folder), "--no-why")
    assert result.returncode == 0, result.stderr
    assert (folder / "app.conf").read_text() != "level=5\n"


def test_a_project_that_no_longer_loads_is_restored_by_its_name(tmp_path: Path, hone_cli) -> None:
    tuned(tmp_path, hone_cli)
    broken = {**PROJECT, "knobs": {"level": {**PROJECT["knobs"]["level"], "range": [9, 1]}}}
    (tmp_path / "hone.yaml").write_text(yaml.safe_dump(broken))

    result = hone_cli("restore", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "app.conf").read_text() == "level=5\n"
    assert "restored 1 knob(s) of by-path" in result.stdout
    (warning,) = result.stderr.splitlines()
    assert "hone.yaml:" in warning and "range [9, 1] is empty" in warning
    assert warning.endswith("(restoring project by-path)")


def test_a_name_is_restored_beside_a_folder_of_that_name(tmp_path: Path, hone_cli) -> None:
    project = tmp_path / "project"
    project.mkdir()
    tuned(project, hone_cli)
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "by-path").mkdir(parents=True)  # a source tree, say: no project in it

    result = hone_cli("restore", "by-path", cwd=elsewhere)
    assert result.returncode == 0, result.stderr
    assert (project / "app.conf").read_text() == "level=5\n"
    assert "restored 1 knob(s) of by-path" in result.stdout
