"""A limits file edited by a ulimit knob (or a profile's [ulimit]) comes back byte for byte,
as a config knob's does: line endings, a missing final newline, bytes that are not UTF-8, its
mode and owner, and a symlink stays a link to the file it names."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hone.errors import ActuationError
from hone.journal import Journal
from hone.knobs.ulimit import UlimitActuator

#: CRLF line endings, no final newline, a byte that is not UTF-8 in a comment
ORIGINAL = b"# limits \xff\r\n*\tsoft\tcore\t0\r\nroot soft nofile 1024"
NOBODY = 65534


@pytest.mark.parametrize(("limit", "was"), [("soft", "1024"), ("hard", "")])
def test_a_limits_file_behind_a_symlink_comes_back_byte_for_byte(
    tmp_path: Path, limit: str, was: str
) -> None:
    """`soft` edits the line there; `hard` adds a line, and restore takes it out again."""
    target = tmp_path / "real" / "limits.conf"
    target.parent.mkdir()
    target.write_bytes(ORIGINAL)
    os.chown(target, NOBODY, NOBODY)
    target.chmod(0o640)
    link = tmp_path / "limits.conf"
    link.symlink_to(target)
    knob = UlimitActuator(domain="root", type=limit, item="nofile", file=str(link))
    journal = Journal.for_project("limits")
    assert journal.remember("nofile", knob) == was
    knob.apply("4096")
    assert link.is_symlink(), "the link was replaced by a file of its own"
    assert knob.get() == "4096"
    assert b"\n" not in target.read_bytes().replace(b"\r\n", b"")  # the file's line endings
    assert all(o.ok for o in journal.restore())
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_bytes() == ORIGINAL
    stat = target.stat()
    assert (stat.st_uid, stat.st_gid, stat.st_mode & 0o7777) == (NOBODY, NOBODY, 0o640)


def test_a_hard_linked_limits_file_is_refused_before_any_change(tmp_path: Path) -> None:
    """The rename that writes the file would give this name a new file and leave the other
    name, the one pam_limits may read, with the old limits through every trial."""
    limits = tmp_path / "limits.conf"
    limits.write_bytes(ORIGINAL)
    other = tmp_path / "limits-main.conf"
    os.link(limits, other)
    knob = UlimitActuator(domain="root", type="soft", item="nofile", file=str(limits))
    with pytest.raises(ActuationError, match="has 2 hard links"):
        knob.check_writable()
    assert os.path.samefile(limits, other) and other.read_bytes() == ORIGINAL
    other.unlink()
    knob.check_writable()  # one name: nothing to refuse
