"""A setting is guarded machine-wide, not per HONE_HOME: a run from a second HONE_HOME is refused
while the first changes vm.swappiness (the holder named), and after the first is killed with
SIGKILL (the command that puts it back named) until that restore runs."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from forked_hone import run_hone
from started_hone import Process
from swappiness_project import SWAPPINESS
from test_crash_resume import kill, make_project, start_tune, wait_for_trials

from hone.errors import HoneError
from hone.journal import Journal
from hone.journal.machine import location
from hone.journal.settings import settings_locked
from hone.knobs.sysctl import SysctlActuator

ROOT = Path(__file__).resolve().parents[2]


def two_homes(
    tmp_path: Path, swappiness: int, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path, Path, Path]:
    """HONE_HOME A, this test's own (its path has a space: the command must quote it), with its
    project `crash-test`; HONE_HOME B, and B's profile folder with one that sets vm.swappiness."""
    home_a, home_b = tmp_path / "home a", tmp_path / "home b"
    monkeypatch.setenv("HONE_HOME", str(home_a))
    (tmp_path / "a").mkdir()
    project = make_project(tmp_path / "a", swappiness, budget=50)  # still running when killed
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    other = 33 if swappiness != 33 else 34
    (profiles / "swap.conf").write_text(f"[sysctl]\nvm.swappiness = {other}\n")
    return home_a, home_b, project, profiles


def tuning_in_a(
    tmp_path: Path, swappiness: int, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path, Path, Path, Process]:
    """two_homes, with A's `hone tune` started and past its first trial (killed on failure)."""
    home_a, home_b, project, profiles = two_homes(tmp_path, swappiness, monkeypatch)
    proc = start_tune(project, home_a)
    try:
        wait_for_trials(proc, 1)
    except BaseException:
        kill(proc)
        raise
    return home_a, home_b, project, profiles, proc


def in_home(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return run_hone(*args, env={**os.environ, "HONE_HOME": str(home), **env}, cwd=ROOT)


def take(journal: Journal) -> None:
    """Take the lock of vm.swappiness for this journal, and let it go."""
    with settings_locked([SysctlActuator("vm.swappiness")], journal.owner()):
        pass


def journaled(home: Path) -> list[Path]:
    """The journals a HONE_HOME holds (a refused command writes none)."""
    return list((home / "journal").glob("*.jsonl"))


def test_a_second_hone_home_is_refused_while_the_first_changes_the_setting(
    tmp_path: Path, swappiness: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    home_a, home_b, _, profiles, proc = tuning_in_a(tmp_path, swappiness, monkeypatch)
    try:
        refused = in_home(home_b, "profile", "apply", "swap", HONE_PROFILE_PATH=str(profiles))
        holder = f"pid {proc.pid}, HONE_HOME={home_a}, project crash-test"
        assert refused.returncode == 2, refused.stderr
        assert f"sysctl:vm.swappiness is being changed by another hone process ({holder})" in (
            refused.stderr
        )
        assert not journaled(home_b)
    finally:
        kill(proc)
    assert in_home(home_a, "restore", "crash-test").returncode == 0
    assert int(SWAPPINESS.read_text()) == swappiness


def test_a_killed_run_holds_its_setting_until_its_own_home_restores_it(
    tmp_path: Path, swappiness: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    home_a, home_b, project, profiles, proc = tuning_in_a(tmp_path, swappiness, monkeypatch)
    kill(proc)  # SIGKILL: vm.swappiness may hold a trial value, A's journal its original
    left = list((location() / "left").glob("*.json"))
    assert [json.loads(p.read_text())["setting"] for p in left] == ["sysctl:vm.swappiness"]

    second = tmp_path / "b"
    second.mkdir()
    (second / "hone.yaml").write_text(project.read_text().replace("crash-test", "second"))
    for refused in (
        in_home(home_b, "tune", str(second)),
        in_home(home_b, "profile", "apply", "swap", HONE_PROFILE_PATH=str(profiles)),
    ):
        assert refused.returncode == 2, refused.stderr
        line = refused.stderr.strip().splitlines()[-1]
        assert f"changed by hone in HONE_HOME={home_a} (project crash-test) and not put" in line
        command = line.split("put it back first: ", 1)[1]
        assert command == f"HONE_HOME={shlex.quote(str(home_a))} hone restore crash-test"
    assert not journaled(home_b)

    restored = subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=ROOT)
    assert restored.returncode == 0, restored.stderr
    assert int(SWAPPINESS.read_text()) == swappiness
    assert not list((location() / "left").glob("*.json"))

    applied = in_home(home_b, "profile", "apply", "swap", HONE_PROFILE_PATH=str(profiles))
    assert applied.returncode == 0, applied.stderr
    assert int(SWAPPINESS.read_text()) != swappiness
    assert in_home(home_b, "profile", "rollback").returncode == 0
    assert int(SWAPPINESS.read_text()) == swappiness
    assert not list((location() / "left").glob("*.json"))


def test_a_record_whose_journal_is_gone_names_how_to_release_it(
    tmp_path: Path, hone_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A HONE_HOME deleted with an original still in it: nothing can restore the setting, and
    the record is never ignored; the user releases it by hand, as the line says."""
    actuator = SysctlActuator("vm.swappiness")  # never changed here: only recorded
    gone = tmp_path / "gone home"
    monkeypatch.setenv("HONE_HOME", str(gone))
    Journal.for_project("old").remember("swappiness", actuator)
    shutil.rmtree(gone)

    monkeypatch.setenv("HONE_HOME", str(hone_home))
    journal = Journal.for_project("new")
    with pytest.raises(HoneError) as refused:
        take(journal)
    message = str(refused.value)
    assert f"changed by hone in HONE_HOME={gone} (project old), whose journal" in message
    release = message.split("release it with: ", 1)[1]
    subprocess.run(["bash", "-c", release], check=True)
    with settings_locked([actuator], journal.owner()):
        assert journal.remember("swappiness", actuator) == SWAPPINESS.read_text().strip()
    journal.archive()
    assert not list((location() / "left").glob("*.json"))


def test_one_home_stacks_scopes_and_another_home_gets_a_command_that_runs_as_said(
    tmp_path: Path, hone_home: Path, swappiness: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Within one HONE_HOME the profiles may change a setting a project's journal holds (a user
    stacks them); another HONE_HOME is refused, and the command it is given puts the setting
    back even for a name a shell or the option parser would misread."""
    name = "-odd name's"
    Journal.for_project(name).remember("swappiness", SysctlActuator("vm.swappiness"))
    take(Journal.for_project(name))  # its own
    take(Journal.for_profiles())  # the same home's other scope
    monkeypatch.setenv("HONE_HOME", str(tmp_path / "other home"))
    with pytest.raises(HoneError) as refused:
        take(Journal.for_profiles())
    command = str(refused.value).split("put it back first: ", 1)[1]
    home = shlex.quote(str(hone_home))
    assert command == f"HONE_HOME={home} hone restore -- '-odd name'\"'\"'s'"
    restored = subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=ROOT)
    assert restored.returncode == 0, restored.stderr
    assert f"restored 1 knob(s) of {name}" in restored.stdout
    take(Journal.for_profiles())
    assert int(SWAPPINESS.read_text()) == swappiness


def test_a_folder_that_cannot_be_made_refuses_any_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a file"
    blocker.write_text("")
    monkeypatch.setenv("HONE_SETTINGS_DIR", str(blocker / "settings"))
    cannot = r"a file/settings, where .* \(Not a directory\); set HONE_SETTINGS_DIR to"
    with pytest.raises(HoneError, match=cannot):
        take(Journal.for_project("p"))
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    monkeypatch.setenv("HONE_SETTINGS_DIR", str(shared))
    with pytest.raises(HoneError, match="other users can write"):
        take(Journal.for_project("p"))
    assert not any(shared.iterdir())  # nothing made in it


def test_a_damaged_record_is_named_not_skipped() -> None:
    journal = Journal.for_project("p")
    journal.remember("swappiness", SysctlActuator("vm.swappiness"))
    (record,) = (location() / "left").glob("*.json")
    record.write_text('{"setting": "sysctl:vm.swappiness"')  # cut short by hand
    with pytest.raises(HoneError, match=r"cannot be read; if no hone run left it changed, rel"):
        take(journal)
