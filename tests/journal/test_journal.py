"""The journal of original values: scopes that cannot collide, and a torn last line (a crash in
the middle of a write) healed before the next append, with real files and a real file knob."""

from __future__ import annotations

from pathlib import Path

from hone.errors import HoneError
from hone.journal import Journal
from hone.knobs.config_file import ConfigFileActuator


def knob(tmp_path: Path, name: str, value: str) -> ConfigFileActuator:
    path = tmp_path / f"{name}.conf"
    path.write_text(f"{name}={value}\n")
    return ConfigFileActuator(file=str(path), key=name)


def test_scopes_are_unique_by_construction(tmp_path: Path) -> None:
    names = ["dup", "dup.", ".dup", "dup..", "du/p", "du_p", "profile", "profiles"]
    paths = {Journal.for_project(n).path for n in names} | {Journal.for_profiles().path}
    assert len(paths) == len(names) + 1
    # a project named `profile` tunes without touching the profiles' journal
    Journal.for_project("profile").remember("a", knob(tmp_path, "a", "1"))
    assert Journal.for_profiles().originals() == {}
    assert set(Journal.for_project("profile").originals()) == {"a"}
    assert Journal.for_project("dup").originals() == {}


def test_a_torn_last_line_is_healed_before_the_next_append(tmp_path: Path) -> None:
    journal = Journal.for_project("torn")
    first = knob(tmp_path, "first", "1")
    journal.begin()
    journal.remember("first", first)
    with open(journal.path, "ab") as handle:  # the crash: half a record, no newline
        handle.write(b'{"name": "second", "op": "orig')
    # the next run reads it (a torn last line is tolerated) and appends after healing it
    again = Journal.for_project("torn")
    assert set(again.originals()) == {"first"}
    again.begin()
    again.remember("second", knob(tmp_path, "second", "2"))
    again.end("applied")
    later = Journal.for_project("torn")  # two runs later: still readable, nothing glued
    assert [r["op"] for r in later.records()] == ["begin", "original", "begin", "original", "end"]
    first.apply("9")
    assert all(o.ok for o in later.restore())
    assert (tmp_path / "first.conf").read_text() == "first=1\n"


def test_state_is_private(tmp_path: Path, monkeypatch) -> None:
    """Trial data and diagnosed command lines are no business of other local users."""
    from hone.storage import StudyStore

    home = tmp_path / "fresh-home"
    monkeypatch.setenv("HONE_HOME", str(home))
    StudyStore().studies()
    assert home.stat().st_mode & 0o777 == 0o700
    assert (home / "studies.db").stat().st_mode & 0o777 == 0o600
    Journal.for_project("p").begin()
    assert Journal.for_project("p").path.stat().st_mode & 0o077 == 0


def test_a_workload_record_survives_until_its_restart_succeeds(tmp_path: Path) -> None:
    from hone.journal import RestoreOutcome

    journal = Journal.for_project_host("served", "h1")
    conf = knob(tmp_path, "threads", "4")
    journal.remember("threads", conf)
    journal.remember_workload("web", {"name": "h1"}, {"start": "s"}, True)
    journal.remember_workload("web", {"name": "h1"}, {"start": "other"}, False)
    # the state before the first change is the first record's; the way to reach it the
    # latest run's (a resumed run's own HONE_PORT), so a restore after it stops that one
    assert journal.workloads()["web"]["running"] and "restarted" not in journal.workloads()["web"]
    assert journal.workloads()["web"]["spec"] == {"start": "other"}
    journal.mark_restarting("web")
    journal.mark_restarting("web")  # once
    assert [r["op"] for r in journal.records()].count("restarting") == 1
    assert journal.workloads()["web"]["restarted"]
    conf.apply("9")
    failed = journal.restore(after=lambda: [RestoreOutcome("workload web", "", "not ready")])
    assert conf.get() == "4" and not failed[-1].ok
    assert journal.path.exists()  # kept: `hone restore` again once the workload can start
    done = journal.restore(after=lambda: [RestoreOutcome("workload web", "restarted")])
    assert all(o.ok for o in done) and not journal.path.exists()


def test_a_damaged_line_is_named_and_the_settings_of_the_others_come_back(
    tmp_path: Path, hone_cli
) -> None:
    """A line damaged in the middle (a disk, an editor) used to refuse the whole journal, so
    `hone restore` put nothing back. Now a run still refuses it (it would record a tuned value
    as the original of the knob whose line was lost), saying what to do; `hone restore` puts
    back what the other lines recorded, names the damaged line and keeps the journal until it
    is dealt with."""
    journal = Journal.for_project("damaged")
    first, second = knob(tmp_path, "first", "1"), knob(tmp_path, "second", "2")
    journal.begin()
    journal.remember("first", first)
    journal.remember("second", second)
    first.apply("8")
    second.apply("9")
    lines = journal.path.read_text().splitlines(keepends=True)
    lines[1] = lines[1][:40] + "\n"  # the first knob's original, cut short
    journal.path.write_text("".join(lines))
    try:
        Journal.for_project("damaged").originals()
    except HoneError as exc:
        assert exc.line == 2 and "`hone restore` puts back what its other lines" in str(exc)
    else:
        raise AssertionError("a run read past a damaged line")
    result = hone_cli("restore", "damaged")
    assert result.returncode == 2, result.stderr
    assert f"{journal.path}:2" in result.stdout and "put that setting back by hand" in result.stdout
    assert (tmp_path / "second.conf").read_text() == "second=2\n"  # put back
    assert (tmp_path / "first.conf").read_text() == "first=8\n"  # its original is unknown
    assert journal.path.exists()  # kept until the damaged line is dealt with
    journal.path.write_text("".join(lines[:1] + lines[2:]))  # the user deletes it
    result = hone_cli("restore", "damaged")
    assert result.returncode == 0 and not journal.path.exists(), result.stderr


def test_a_damaged_last_line_is_not_taken_for_a_torn_one(tmp_path: Path) -> None:
    """A crash tears the last line before its newline; a last line that has its newline was
    written whole, so if it does not read it is damage, and its setting would else be lost."""
    journal = Journal.for_project("tail")
    journal.remember("first", knob(tmp_path, "first", "1"))
    text = journal.path.read_text()
    journal.path.write_text(text[:50] + "\n")
    try:
        Journal.for_project("tail").originals()
    except HoneError as exc:
        assert exc.line == 1
    else:
        raise AssertionError("a damaged last line was read as a torn one")
    journal.path.write_text(text[:50])  # no newline: torn by a crash, the change never made
    assert Journal.for_project("tail").originals() == {}
