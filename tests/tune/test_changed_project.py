"""A project edited while its journal still holds originals (a winner applied, a run killed):
a knob that now changes another setting is refused before anything changes, since the
recorded value is the old setting's and the new setting's own would never be recorded."""

from __future__ import annotations

from pathlib import Path

import yaml


def write_project(folder: Path, conf: str) -> None:
    """`level` (1 to 9) is a key in `conf`; the benchmark prints it as the score."""
    project = {
        "name": "moved",
        "knobs": {
            "level": {
                "type": "int",
                "range": [1, 9],
                "config": {"file": conf, "key": "level", "restart": False},
            }
        },
        "benchmark": {"command": f"sed -n 's/^level=/score: /p' {conf}", "timeout": 10},
        "metrics": {"score": {"pattern": r"score: (\S+)", "direction": "maximize"}},
        "tuning": {"engine": "random", "budget": 4, "baseline": 1, "seed": 2, "apply": "always"},
    }
    (folder / "hone.yaml").write_text(yaml.safe_dump(project))


def test_a_knob_moved_to_another_file_is_refused_until_restore(tmp_path: Path, hone_cli) -> None:
    (tmp_path / "old.conf").write_text("level=3\n")
    (tmp_path / "new.conf").write_text("level=4\n")
    write_project(tmp_path, "old.conf")
    first = hone_cli("tune", str(tmp_path), "--no-why")
    assert first.returncode == 0, first.stderr
    applied = (tmp_path / "old.conf").read_text()
    assert applied != "level=3\n"

    write_project(tmp_path, "new.conf")  # the knob now lives in another file
    second = hone_cli("tune", str(tmp_path), "--no-why", "--apply", "never")
    assert second.returncode == 2
    line = second.stderr.strip()
    assert "\n" not in line and "knob level: its original value was recorded for" in line
    assert "old.conf" in line and "new.conf" in line and "hone restore" in line
    assert (tmp_path / "new.conf").read_text() == "level=4\n"  # nothing changed
    assert (tmp_path / "old.conf").read_text() == applied

    assert hone_cli("restore", "moved").returncode == 0
    assert (tmp_path / "old.conf").read_text() == "level=3\n"
    third = hone_cli("tune", str(tmp_path), "--no-why", "--apply", "never")
    assert third.returncode == 0, third.stderr
    assert (tmp_path / "new.conf").read_text() == "level=4\n"  # its own original, put back
