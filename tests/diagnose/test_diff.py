"""Differences between two profiles: of synthetic stacks with known moves, and of two real runs
of a program whose hot function's share changes from 70 % to 30 %."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.diagnose.inputs import build
from hone.diagnose.diff import diff, diff_summary, format_diff, points
from hone.diagnose.flamegraph import diff_flamegraph_svg
from hone.diagnose.profile import Profile
from hone.diagnose.record import record

BEFORE = Profile.from_folded(
    {"srv;main;handle;work": 50, "srv;main;handle;wait;futex": 10, "srv;main;log": 40}
)
AFTER = Profile.from_folded(
    {"srv;main;handle;work": 100, "srv;main;handle;wait;futex": 80, "srv;main;log": 20}
)


def test_shares_moved() -> None:
    changes = {c.name: c for c in diff(BEFORE, AFTER)}
    assert changes["wait"].before == pytest.approx(0.10)
    assert changes["wait"].after == pytest.approx(0.40)
    assert changes["wait"].delta == pytest.approx(0.30)
    assert changes["log"].delta == pytest.approx(-0.30)
    assert changes["main"].delta == 0
    assert diff(BEFORE, AFTER)[0].name in {"handle", "wait", "futex"}
    self_changes = {c.name: c for c in diff(BEFORE, AFTER, measure="self")}
    assert self_changes["handle"].delta == 0  # never a leaf
    assert self_changes["futex"].delta == pytest.approx(0.30)


def test_summary_names_each_move_once() -> None:
    # handle, wait and futex all moved +30 points: one move, named by its outermost function.
    assert diff_summary(BEFORE, AFTER) == (
        "handle +30 points (60 % -> 90 %), log -30 points (40 % -> 10 %)"
    )
    assert points(-0.125) == "-12.5 points"
    assert "no function" in diff_summary(BEFORE, BEFORE)


def test_by_module_and_table() -> None:
    changes = diff(BEFORE, AFTER, by="module")
    assert [c.name for c in changes] == ["?"]  # folded input has no modules
    text = format_diff(diff(BEFORE, AFTER), limit=3)
    assert text.splitlines()[0].split() == ["before", "%", "after", "%", "change", "function"]


@pytest.mark.slow
def test_two_real_runs(tmp_path: Path) -> None:
    binary = build("hot_split", tmp_path)
    runs = []
    for hot in ("70", "30"):
        rec = record(command=[str(binary), "1", hot], frequency_hz=499, output_dir=tmp_path / hot)
        runs.append(rec.profile())
    before, after = runs
    changes = {c.name: c for c in diff(before, after, measure="self")}
    assert changes["hot_work"].delta == pytest.approx(-0.40, abs=0.15)
    assert changes["cold_work"].delta == pytest.approx(0.40, abs=0.15)
    assert changes["run_round"].delta == pytest.approx(0.0, abs=0.05)  # the caller: unchanged
    assert changes["hot_work"].module == "hot_split"  # matched by file name
    line = diff_summary(before, after, limit=2)
    assert {part.split()[0] for part in line.split(", ")} == {"hot_work", "cold_work"}
    svg = diff_flamegraph_svg(before, after)
    assert 'data-n="hot_work"' in svg and 'data-n="cold_work"' in svg
