"""`hone restore` after a winner was applied and someone changed a setting since: the original
goes back, and the restore says which change it overwrote (it used to say only `ok`)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml


def write_project(folder: Path) -> None:
    """`level` (1 to 9, 5 now) is a key in app.conf, and the score: 9 wins."""
    (folder / "app.conf").write_text("level=5\n")
    project = {
        "name": "changed-since",
        "knobs": {
            "level": {
                "type": "int",
                "range": [1, 9],
                "config": {"file": "app.conf", "key": "level", "restart": False},
            }
        },
        "benchmark": {"command": "sed -n 's/^level=/score: /p' app.conf", "timeout": 10},
        "metrics": {"score": {"pattern": r"score: (\S+)", "direction": "maximize"}},
        "tuning": {"engine": "gridsearch", "budget": 9, "baseline": 1, "apply": "always",
                   "confirm": {"candidates": 1, "rounds": 2}},
    }  # fmt: skip
    (folder / "hone.yaml").write_text(yaml.safe_dump(project))


def test_restore_says_which_later_change_it_overwrote(tmp_path: Path, hone_cli) -> None:
    write_project(tmp_path)
    result = hone_cli("tune", str(tmp_path), "--no-why")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "app.conf").read_text() == "level=9\n"  # the winner, applied

    (tmp_path / "app.conf").write_text("level=2\n")  # an administrator's change since
    result = hone_cli("restore", "changed-since")
    assert result.returncode == 0, result.stderr
    assert "overwrote a change: it held '2', not the '9' hone had left" in result.stdout
    assert (tmp_path / "app.conf").read_text() == "level=5\n"


def test_restore_of_an_untouched_winner_reports_no_change(tmp_path: Path, hone_cli) -> None:
    write_project(tmp_path)
    assert hone_cli("tune", str(tmp_path), "--no-why").returncode == 0
    result = hone_cli("restore", "changed-since", "--json")
    assert result.returncode == 0, result.stderr
    assert [(k["knob"], k["value"], k["changed"]) for k in json.loads(result.stdout)["knobs"]] == [
        ("level", "5", None)
    ]
    assert (tmp_path / "app.conf").read_text() == "level=5\n"
