"""Fixtures for the profile tests: the live values they touch are put back whatever happens."""

from __future__ import annotations

from pathlib import Path

import pytest
from profiles_live import CORPUS, DIRTY, LIMITS, SWAPPINESS, THP, read_live, selected


@pytest.fixture
def live():
    """swappiness, dirty_background_ratio, THP defrag and limits.conf, restored at the end."""
    before = read_live()
    limits = LIMITS.read_bytes()
    yield before
    SWAPPINESS.write_text(before[0])
    DIRTY.write_text(before[1])
    THP.write_text(before[2])
    if LIMITS.read_bytes() != limits:
        LIMITS.write_bytes(limits)


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A profile folder searched before A-Tune's corpus, with a base profile and one that
    includes it."""
    profiles = tmp_path / "profiles"
    (profiles / "include").mkdir(parents=True)
    monkeypatch.setenv("HONE_PROFILE_PATH", f"{profiles}:{CORPUS}")
    other_thp = "never" if selected(THP) != "never" else "defer"
    (profiles / "include" / "base.conf").write_text(
        f"[main]\n[sysctl]\nvm.swappiness = 13\n[sysfs]\nkernel/mm/transparent_hugepage/defrag"
        f" = {other_thp}\n[tip]\nuse fewer threads = application\n"
    )
    (profiles / "web.conf").write_text(
        "[main]\ninclude = include-base\n[sysctl]\nvm.swappiness = 17\n"
        "vm.dirty_background_ratio = 7\n[bootloader.grub2]\nhugepages = 10\n"
    )
    return profiles
