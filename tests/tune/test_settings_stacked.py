"""The machine-wide record of a setting names every scope of its HONE_HOME that journals its
original, so another HONE_HOME stays refused until the last of them is restored, and is told to
restore them last stacked first; a journal written before these records existed gets its record
at its home's next command."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

from swappiness_project import SWAPPINESS
from test_settings_machine_wide import ROOT, in_home

from hone.journal import Journal
from hone.journal.machine import location
from hone.journal.settings import settings_locked
from hone.knobs.sysctl import SysctlActuator


def profile_values(tmp_path: Path, swappiness: int) -> tuple[Path, int, int]:
    """A profile folder whose `swap` sets vm.swappiness to one value; another for a project."""
    first, second = [v for v in (31, 32, 33) if v != swappiness][:2]
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "swap.conf").write_text(f"[sysctl]\nvm.swappiness = {first}\n")
    return profiles, first, second


def apply_profile(home: Path, profiles: Path) -> None:
    applied = in_home(home, "profile", "apply", "swap", HONE_PROFILE_PATH=str(profiles))
    assert applied.returncode == 0, applied.stderr


def tune(name: str, value: int) -> None:
    """Project `name` of this process's HONE_HOME journals vm.swappiness and sets `value`."""
    journal = Journal.for_project(name)
    journal.begin(study=f"{name}#1")
    actuator = SysctlActuator("vm.swappiness")
    with settings_locked([actuator], journal.owner()):
        journal.remember("swappiness", actuator)
        actuator.apply(str(value))


def stack(home: Path, profiles: Path, name: str, value: int) -> None:
    """In `home` (this process's HONE_HOME): the profile `swap` applied, then project `name`
    journaling the profile's value as its original and setting its own."""
    apply_profile(home, profiles)
    tune(name, value)


def holders() -> list[str]:
    """The scopes the records name, setting by setting."""
    records = [json.loads(p.read_text()) for p in sorted((location() / "left").glob("*.json"))]
    return [f"{r['setting']}: {', '.join(h['label'] for h in r['holders'])}" for r in records]


def refused_command(home: Path, profiles: Path) -> tuple[str, str]:
    """`hone profile apply swap` in another HONE_HOME, refused: its line, and the command in it."""
    refused = in_home(home, "profile", "apply", "swap", HONE_PROFILE_PATH=str(profiles))
    assert refused.returncode == 2, refused.stderr
    line = refused.stderr.strip().splitlines()[-1]
    return line, line.split("put it back first: ", 1)[1]


def run(command: str) -> None:
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr


def test_a_stacked_setting_names_every_scope_and_their_restores_last_stacked_first(
    tmp_path: Path, hone_home: Path, swappiness: int
) -> None:
    profiles, _, project_value = profile_values(tmp_path, swappiness)
    stack(hone_home, profiles, "web", project_value)
    assert holders() == ["sysctl:vm.swappiness: the profiles, project web"]

    line, command = refused_command(tmp_path / "other home", profiles)
    assert f"HONE_HOME={hone_home} (project web on the profiles) and not put back" in line
    home = shlex.quote(str(hone_home))
    assert command == f"HONE_HOME={home} hone restore web && HONE_HOME={home} hone profile rollback"
    run(command)
    assert int(SWAPPINESS.read_text()) == swappiness
    assert holders() == []


def test_rolling_back_the_scope_under_a_project_keeps_the_setting_held_for_the_project(
    tmp_path: Path, hone_home: Path, swappiness: int
) -> None:
    """The profile rolled back first: the project's journal still holds an original (the
    profile's value), so the record stays, naming the project alone."""
    profiles, profile_value, project_value = profile_values(tmp_path, swappiness)
    stack(hone_home, profiles, "web", project_value)
    assert in_home(hone_home, "profile", "rollback").returncode == 0
    assert holders() == ["sysctl:vm.swappiness: project web"]

    line, command = refused_command(tmp_path / "other home", profiles)
    assert f"HONE_HOME={hone_home} (project web) and not put back" in line
    assert command == f"HONE_HOME={shlex.quote(str(hone_home))} hone restore web"
    run(command)
    assert int(SWAPPINESS.read_text()) == profile_value  # the project's original
    assert holders() == []


def test_journals_without_records_get_them_at_their_homes_next_command(
    tmp_path: Path, hone_home: Path, swappiness: int
) -> None:
    """Journals written before the machine-wide records existed: the home's next command, even
    one that changes nothing, records them, in the order they were stacked (a profile applied
    over a project's winner here: not the order of their file names)."""
    profiles, _, project_value = profile_values(tmp_path, swappiness)
    tune("web.v2", project_value)  # a name its file name does not tell
    apply_profile(hone_home, profiles)
    for record in (location() / "left").glob("*.json"):
        record.unlink()

    nothing = in_home(hone_home, "restore", "unrelated")
    assert nothing.returncode == 0, nothing.stderr
    assert holders() == ["sysctl:vm.swappiness: project web.v2, the profiles"]
    _, command = refused_command(tmp_path / "other home", profiles)
    home = shlex.quote(str(hone_home))
    assert command == (
        f"HONE_HOME={home} hone profile rollback && HONE_HOME={home} hone restore web.v2"
    )
    run(command)
    assert int(SWAPPINESS.read_text()) == swappiness
    assert holders() == []
