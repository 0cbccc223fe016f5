"""Profiles: every A-Tune profile loads; applying changes real sysctl and sysfs values as a
transaction; rollback restores them; a failure, a bad key or a kill in the middle leaves
nothing changed once rolled back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hone.errors import HoneError
from hone.journal import Journal
from hone.profiles import ProfileLibrary, active_profile, apply_profile, check_profile, rollback

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "atune-corpus" / "profiles"
SWAPPINESS = Path("/proc/sys/vm/swappiness")
DIRTY = Path("/proc/sys/vm/dirty_background_ratio")
THP = Path("/sys/kernel/mm/transparent_hugepage/defrag")


def selected(path: Path) -> str:
    text = path.read_text().strip()
    return text.split("[")[1].split("]")[0] if "[" in text else text


@pytest.fixture
def live():
    """The live values this file's tests touch, put back whatever happens."""
    before = (SWAPPINESS.read_text(), DIRTY.read_text(), selected(THP))
    yield before
    SWAPPINESS.write_text(before[0])
    DIRTY.write_text(before[1])
    THP.write_text(before[2])


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HONE_PROFILE_PATH", f"{tmp_path}:{CORPUS}")
    (tmp_path / "include").mkdir()
    other_thp = "never" if selected(THP) != "never" else "defer"
    (tmp_path / "include" / "base.conf").write_text(
        f"[main]\n[sysctl]\nvm.swappiness = 13\n[sysfs]\nkernel/mm/transparent_hugepage/defrag"
        f" = {other_thp}\n[tip]\nuse fewer threads = application\n"
    )
    (tmp_path / "web.conf").write_text(
        "[main]\ninclude = include-base\n[sysctl]\nvm.swappiness = 17\n"
        "vm.dirty_background_ratio = 7\n[bootloader.grub2]\nhugepages = 10\n"
    )
    return tmp_path


def test_every_corpus_profile_loads_or_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HONE_PROFILE_PATH", str(CORPUS))
    library = ProfileLibrary()
    names = library.names()
    assert len(names) == 64
    for name in names:
        profile = library.load(name)
        assert profile.items or profile.includes, name
    throughput = library.load("include-throughput-performance")
    assert any(i.key == "vm.swappiness" and i.value == "10" for i in throughput.items)
    assert not any("{disk}" in i.key for i in throughput.items)


def test_apply_check_and_rollback(folder: Path, live) -> None:
    profile = ProfileLibrary().load("web")
    values = {(i.section, i.key): i.value for i in profile.items}
    assert values["sysctl", "vm.swappiness"] == "17"  # the including profile wins
    outcomes = apply_profile(profile)
    assert {o.status for o in outcomes} == {"set", "skipped"}
    assert SWAPPINESS.read_text().strip() == "17" and DIRTY.read_text().strip() == "7"
    assert selected(THP) != live[2]
    assert active_profile() == "web"
    assert all(o.status in ("matches", "skipped") for o in check_profile(profile))
    rollback()
    assert (SWAPPINESS.read_text(), DIRTY.read_text(), selected(THP)) == live
    assert active_profile() is None


def test_rejected_value_rolls_back_everything(folder: Path, live) -> None:
    (folder / "bad.conf").write_text(
        "[sysctl]\nvm.swappiness = 21\nvm.dirty_background_ratio = 7\n"
        "[sysfs]\nkernel/mm/transparent_hugepage/defrag = bogus\n"
    )
    with pytest.raises(HoneError, match=r"bogus: cannot set .*rolled back"):
        apply_profile(ProfileLibrary().load("bad"))
    assert (SWAPPINESS.read_text(), DIRTY.read_text(), selected(THP)) == live


def test_bad_key_and_missing_include(folder: Path, live) -> None:
    (folder / "typo.conf").write_text("[sysctl]\nvm.swappiness = 22\nvm.swapiness = 1\n")
    with pytest.raises(HoneError, match=r"vm\.swapiness"):
        apply_profile(ProfileLibrary().load("typo"))
    assert SWAPPINESS.read_text() == live[0]
    (folder / "lost.conf").write_text("[main]\ninclude = include-nowhere\n")
    with pytest.raises(HoneError, match="include 'include-nowhere': no profile named"):
        ProfileLibrary().load("lost")


def test_kill_9_in_the_middle_then_rollback(folder: Path, live, hone_home: Path) -> None:
    (folder / "slow.conf").write_text(
        "[sysctl]\nvm.dirty_background_ratio = 9\nvm.swappiness = 25\n"
        "[sysfs]\nkernel/mm/transparent_hugepage/defrag = never\n"
    )
    code = (  # every set takes a second, so the kill lands between the first and the second
        "import time\nfrom hone.knobs.sysctl import SysctlActuator\n"
        "original = SysctlActuator.set\n"
        "def slow(self, value):\n    original(self, value)\n    time.sleep(1.0)\n"
        "SysctlActuator.set = slow\n"
        "from hone.profiles import ProfileLibrary, apply_profile\n"
        "apply_profile(ProfileLibrary().load('slow'))\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], env={**os.environ, "HONE_HOME": str(hone_home)}
    )
    deadline = time.monotonic() + 20
    while DIRTY.read_text().strip() != "9" and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert DIRTY.read_text().strip() == "9"  # it had started changing things
    assert Journal.for_scope("profile").unfinished() is not None
    rollback()
    assert (SWAPPINESS.read_text(), DIRTY.read_text(), selected(THP)) == live
