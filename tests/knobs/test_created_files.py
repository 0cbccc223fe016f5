"""A file (or folder) that did not exist before hone's first write does not exist after restore:
a ulimit knob's limits drop-in, the folder of hone's GRUB drop-in. Restore used to leave an empty
limits file behind, as the journal could not say that the file had been absent. One that holds
what someone else wrote since is kept, and the restore says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from hone.journal import Journal
from hone.knobs.grub import GrubActuator
from hone.knobs.ulimit import UlimitActuator


def write_project(folder: Path, limits: Path, apply: str) -> None:
    """A ulimit knob on a drop-in that does not exist yet; the benchmark prints a constant."""
    project = {
        "name": "limits-drop-in",
        "knobs": {
            "nofile": {
                "type": "int",
                "range": [1024, 8192],
                "ulimit": {"domain": "root", "type": "soft", "item": "nofile",
                           "file": str(limits)},
            }
        },
        "benchmark": {"command": "echo score: 5", "timeout": 10},
        "metrics": {"score": {"pattern": r"score: (\d+)", "direction": "maximize"}},
        "tuning": {"engine": "random", "budget": 2, "baseline": 1, "apply": apply,
                   "confirm": {"candidates": 1, "rounds": 1}},
    }  # fmt: skip
    (folder / "hone.yaml").write_text(yaml.safe_dump(project))


def test_a_limits_drop_in_hone_created_is_gone_at_the_end_of_a_run(
    tmp_path: Path, hone_cli
) -> None:
    limits = tmp_path / "limits.d" / "90-hone.conf"
    limits.parent.mkdir()
    write_project(tmp_path, limits, "never")
    result = hone_cli("tune", str(tmp_path), "--no-why")
    assert result.returncode == 0, result.stderr
    assert not limits.exists(), f"left behind: {limits.read_bytes()!r}"


def test_restore_removes_the_drop_in_an_applied_winner_created(tmp_path: Path, hone_cli) -> None:
    limits = tmp_path / "limits.d" / "90-hone.conf"
    limits.parent.mkdir()
    write_project(tmp_path, limits, "always")
    assert hone_cli("tune", str(tmp_path), "--no-why").returncode == 0
    assert limits.read_text().startswith("root\tsoft\tnofile\t")  # the winner, applied
    result = hone_cli("restore", "limits-drop-in", "--json")
    assert result.returncode == 0, result.stderr
    assert [(k["knob"], k["ok"], k["kept"]) for k in json.loads(result.stdout)["knobs"]] == [
        ("nofile", True, None)
    ]
    assert not limits.exists()


def test_a_drop_in_someone_wrote_to_since_is_kept_and_said(tmp_path: Path, hone_cli) -> None:
    limits = tmp_path / "limits.d" / "90-hone.conf"
    limits.parent.mkdir()
    write_project(tmp_path, limits, "always")
    assert hone_cli("tune", str(tmp_path), "--no-why").returncode == 0
    with limits.open("a") as handle:
        handle.write("*\thard\tcore\t0\n")  # an administrator's line since
    result = hone_cli("restore", "limits-drop-in")
    assert result.returncode == 0, result.stderr
    assert f"(kept {limits}, absent before hone: it holds text hone did not write)" in (
        result.stdout.replace("\n", "")
    )
    assert limits.read_text() == "*\thard\tcore\t0\n"  # hone's line out, the other kept


def test_two_limits_in_one_new_drop_in_leave_nothing(tmp_path: Path) -> None:
    """Both are journaled absent; the file goes once both lines are out, and the one restored
    first is not told that the other's line is someone else's."""
    limits = tmp_path / "99-pair.conf"
    knobs = [UlimitActuator("root", kind, "nofile", str(limits)) for kind in ("soft", "hard")]
    journal = Journal.for_project("pair")
    for number, knob in enumerate(knobs):
        assert journal.remember(f"k{number}", knob) == ""
    for knob in knobs:
        knob.apply("4096")
    outcomes = journal.restore()
    assert [(o.ok, o.kept) for o in outcomes] == [(True, None), (True, None)]
    assert not limits.exists()


def test_removing_an_absent_limit_creates_no_file(tmp_path: Path) -> None:
    limits = tmp_path / "absent.conf"
    UlimitActuator("root", "soft", "nofile", str(limits)).apply("")
    assert not limits.exists()


@pytest.mark.parametrize("someone_elses", [False, True])
def test_the_grub_drop_in_folder_hone_created_goes_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, someone_elses: bool
) -> None:
    folder = tmp_path / "default" / "grub.d"
    monkeypatch.setenv("HONE_GRUB_DROPIN", str(folder / "hone.cfg"))
    knob = GrubActuator("transparent_hugepage")
    journal = Journal.for_profiles()
    assert journal.remember("grub:transparent_hugepage", knob) == ""
    knob.apply("never")
    assert (folder / "hone.cfg").exists()
    if someone_elses:
        (folder / "local.cfg").write_text("GRUB_TIMEOUT=3\n")
    (outcome,) = journal.restore()
    assert outcome.ok
    if someone_elses:
        created = tmp_path / "default"  # the first folder missing on the way
        assert outcome.kept == (
            f"kept {created}, absent before hone: it holds files hone did not write"
        )
        assert sorted(p.name for p in folder.iterdir()) == ["local.cfg"]
    else:
        assert outcome.kept is None
        assert not (tmp_path / "default").exists()
