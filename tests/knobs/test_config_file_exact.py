"""Config-file knobs leave a file exactly as they found it: hostile values are refused before
the file changes, restore is checked byte by byte, and a symlinked file stays a link with its
target's mode and extended attributes."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from hone.errors import ActuationError
from hone.journal import Journal
from hone.knobs.config_file import ConfigFileActuator

ORIGINAL = b"# the app's settings\nworkers = 4  # per core\nmode = 'fast'\n[cache]\nsize: 64\n"
HOSTILE = ["8\nevil = 1", "8 # comment", "8; x", "'quoted", 'x"', "8\r", "", "a b c", "8\x00"]


@pytest.mark.parametrize("fmt", ["equals", "ini"])
@pytest.mark.parametrize("value", HOSTILE)
def test_any_value_is_refused_or_restored_byte_exact(tmp_path: Path, fmt: str, value: str) -> None:
    path = tmp_path / "app.conf"
    path.write_bytes(ORIGINAL)
    knob = ConfigFileActuator(file=str(path), key="workers", format=fmt)
    journal = Journal.for_project("exact")
    journal.remember("workers", knob)
    try:
        knob.apply(value)
    except ActuationError as exc:
        assert "would not read it back" in exc.message or "reads back" in exc.message
    assert all(o.ok for o in journal.restore())
    assert path.read_bytes() == ORIGINAL


def test_values_that_would_not_read_back_are_refused_before_the_file_changes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "app.conf"
    path.write_bytes(ORIGINAL)
    knob = ConfigFileActuator(file=str(path), key="workers")
    for value in ("8\nevil = 1", "8 # x", "8;", "'8"):
        with pytest.raises(ActuationError, match="would not read it back"):
            knob.apply(value)
        assert path.read_bytes() == ORIGINAL


def test_a_symlinked_file_stays_a_link_and_keeps_its_targets_metadata(tmp_path: Path) -> None:
    target = tmp_path / "real" / "app.conf"
    target.parent.mkdir()
    target.write_bytes(ORIGINAL)
    target.chmod(0o640)
    with contextlib.suppress(OSError):  # where the file system has user xattrs
        os.setxattr(target, "user.hone-test", b"kept")
    link = tmp_path / "app.conf"
    link.symlink_to(target)
    knob = ConfigFileActuator(file=str(link), key="workers")
    journal = Journal.for_project("linked")
    journal.remember("workers", knob)
    knob.apply("12")
    assert link.is_symlink() and b"workers = 12  # per core" in target.read_bytes()
    assert target.stat().st_mode & 0o777 == 0o640
    assert all(o.ok for o in journal.restore())
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_bytes() == ORIGINAL
    with contextlib.suppress(OSError):
        assert os.getxattr(target, "user.hone-test") == b"kept"
