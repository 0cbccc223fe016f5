"""`hone new --metric NAME=REGEX` checks the regex before writing: a bad one made a hone.yaml
that `hone check` refused, and the folder was left behind."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.mark.parametrize(
    ("regex", "reason"), [("((", "bad regex"), ("[0-9]+", "the regex needs one (group)")]
)
def test_a_bad_metric_regex_writes_nothing(
    regex: str, reason: str, tmp_path: Path, hone_run
) -> None:
    folder = tmp_path / "project"
    ran = hone_run("new", str(folder), "--from-profile", "hone-compute", "--metric", f"x={regex}")
    assert ran.one_line().startswith(f"hone: --metric 'x={regex}': {reason}")
    assert not folder.exists()
