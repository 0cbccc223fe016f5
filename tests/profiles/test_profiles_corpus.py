"""Every A-Tune profile and every built-in profile loads; the command line speaks one line per
error and exits 2; define / update / undefine keep broken files out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from profiles_live import CORPUS, SWAPPINESS, read_live

from hone.profiles import ProfileLibrary, list_profiles, load
from hone.profiles.library import BUILTIN


def test_every_corpus_profile_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HONE_PROFILE_PATH", str(CORPUS))
    library = ProfileLibrary([CORPUS])
    names = library.names()
    assert len(names) == 64
    for name in names:
        profile = library.load(name)
        assert profile.items or profile.includes, name
        assert not any("{" in i.key + i.value for i in profile.items), name
    tips = {i.key: i.value for i in library.load("include-mysql-2p-sysbench").section("tip")}
    advice = "set --innodb-flush-log-at-trx-commit=0 and --sync-binlog=0 can extremely"
    assert tips[f"{advice} improve performance but lose data reliability"] == "application"
    throughput = library.load("include-throughput-performance")
    assert any(i.key == "vm.swappiness" and i.value == "10" for i in throughput.items)
    mysql = library.load("database-mysql-2p-sysbench-hdd")
    disk, how = mysql.placeholders["disk"]
    assert how == "detected" and Path("/sys/block", disk).exists()
    assert any(i.key.startswith(f"block/{disk}/queue/") for i in mysql.items)
    monkeypatch.setenv("HONE_DISK", "sdz")
    assert library.load("database-mysql-2p-sysbench-hdd").placeholders["disk"] == (
        "sdz",
        "from HONE_DISK",
    )


def test_builtin_profiles_load_and_are_listed() -> None:
    names = {info.name for info in list_profiles()}
    builtin = {f"hone-{p.stem}" for p in (BUILTIN / "hone").glob("*.conf")}
    assert {"hone-web", "hone-database", "hone-idle", "hone-compute"} <= builtin <= names
    for name in builtin:
        assert load(name).path.is_relative_to(BUILTIN)


def test_cli_errors_are_one_line(hone_cli, folder: Path, live) -> None:
    (folder / "typo.conf").write_text("[sysctl]\nvm.swappiness = 22\nvm.swapiness = 1\n")
    (folder / "lost.conf").write_text("[main]\ninclude = include-nowhere\n")
    (folder / "bad.conf").write_text("[sysctl]\nvm.swappiness = 21\nvm.swappiness_x = 1\n")
    (folder / "rejected.conf").write_text("[sysctl]\nvm.swappiness = 21\nvm.swappiness = -7\n")
    (folder / "kernel.conf").write_text(
        "[sysctl]\nvm.dirty_background_ratio = 8\nvm.swappiness = 999\n"
    )
    for name, expected in [
        ("typo", "vm.swapiness: cannot read"),
        ("lost", "include 'include-nowhere'"),
        ("kernel", "vm.swappiness = 999: cannot set '999': Invalid argument"),
        ("nowhere", "no profile named 'nowhere'"),
    ]:
        result = hone_cli("profile", "apply", name)
        assert result.returncode == 2, (name, result.stdout)
        assert result.stderr.count("\n") == 1 and expected in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
        assert read_live() == live, name
    applied = hone_cli("profile", "apply", "web")
    assert applied.returncode == 0, applied.stderr
    assert "set       [sysctl] vm.swappiness = 17" in applied.stdout
    checked = hone_cli("profile", "check")
    assert "matches   [sysctl] vm.swappiness = 17  live: 17" in checked.stdout
    # the boot parameter cannot be staged without GRUB: the running kernel differs, exit 1
    assert "differs   [bootloader.grub2] hugepages = 10  not set" in checked.stdout
    assert checked.returncode == 1
    assert "* web" in hone_cli("profile", "list").stdout
    SWAPPINESS.write_text("44")  # someone changes it behind hone's back
    drifted = hone_cli("profile", "check")
    assert drifted.returncode == 1 and "differs   [sysctl] vm.swappiness = 17  live: 44" in (
        drifted.stdout
    )
    rolled = hone_cli("profile", "rollback")
    assert rolled.returncode == 0 and "rolled back 3 settings" in rolled.stdout
    assert read_live() == live
    applied_json = json.loads(hone_cli("profile", "apply", "web", "--json").stdout)
    items = {(i["section"], i["key"]): i for i in applied_json["items"]}
    assert applied_json["profile"] == "web" and applied_json["changed"] >= 1
    assert items["sysctl", "vm.swappiness"]["status"] == "set"
    assert items["sysctl", "vm.swappiness"]["value"] == "17"
    rolled_json = json.loads(hone_cli("profile", "rollback", "--json").stdout)
    assert len(rolled_json["restored"]) == 3 and read_live() == live


def test_define_update_undefine(hone_cli, tmp_path: Path) -> None:
    good = tmp_path / "good.conf"
    good.write_text("[sysctl]\nvm.swappiness = 12\n")
    broken = tmp_path / "broken.conf"
    broken.write_text("[sysctl\nvm.swappiness = 12\n")
    assert hone_cli("profile", "define", "mine", str(good)).returncode == 0
    assert "mine" in hone_cli("profile", "info", "mine").stdout
    refused = hone_cli("profile", "update", "mine", str(broken))
    assert refused.returncode == 2 and "cannot read profile" in refused.stderr
    assert load("mine").items[0].value == "12"  # the old file stayed
    assert hone_cli("profile", "define", "other", str(broken)).returncode == 2
    assert "other" not in {info.name for info in list_profiles()}
    assert hone_cli("profile", "undefine", "mine").returncode == 0
    assert hone_cli("profile", "undefine", "mine").returncode == 2


def test_an_item_without_a_value_is_refused_where_it_was_written(hone_cli, tmp_path: Path):
    """`vm.swappiness` with no `= value` was defined; `apply` then failed naming hone's copy
    of the file under its state folder, which the user never wrote."""
    empty = tmp_path / "empty.conf"
    empty.write_text("[sysctl]\nvm.dirty_ratio = 12\n\nvm.swappiness\n")
    refused = hone_cli("profile", "define", "mine", str(empty))
    assert (refused.returncode, refused.stderr) == (
        2, f"hone: {empty}:4: vm.swappiness: no value: write `key = value`\n")  # fmt: skip
    assert "mine" not in {info.name for info in list_profiles()}
