"""TMAM from recorded-style perf stat outputs (internally consistent), and the fallback."""

from __future__ import annotations

from pathlib import Path

import pytest

from hone.diagnose.probe import perf_stat_counts, probe
from hone.diagnose.threads import ThreadStat
from hone.diagnose.topdown import compute, measure, software_split

FIXTURES = Path(__file__).parent / "fixtures"


def load(name: str) -> dict[str, float | None]:
    return perf_stat_counts((FIXTURES / f"perf-stat-{name}.csv").read_text())


@pytest.mark.parametrize(
    ("fixture", "family", "method", "level1"),
    [
        ("skylake", 6, "intel-4wide", (20.0, 7.5, 32.5, 40.0)),
        ("icelake", 6, "intel-perf-metrics", (20.0, 5.0, 35.0, 40.0)),
        ("zen4", 25, "amd-zen4", (20.0, 5.0, 35.0, 40.0)),
    ],
)
def test_level1_sums_to_100_and_matches_the_formulas(
    fixture: str, family: int, method: str, level1: tuple[float, ...]
) -> None:
    result = compute(load(fixture), family)
    assert result.available and result.method == method
    assert sum(result.level1.values()) == pytest.approx(100.0, abs=1e-6)
    got = tuple(
        result.level1[k] for k in ("Frontend Bound", "Bad Speculation", "Backend Bound", "Retiring")
    )
    assert got == pytest.approx(level1, abs=1e-3)
    for parent, children in result.level2.items():
        assert sum(children.values()) == pytest.approx(result.level1[parent], abs=1e-2)
        assert all(v >= 0 for v in children.values())


def test_level2_values() -> None:
    sky = compute(load("skylake"))
    assert sky.level2["Frontend Bound"]["Fetch Latency"] == pytest.approx(15.0)
    assert sky.level2["Bad Speculation"]["Branch Mispredicts"] == pytest.approx(6.75)
    icl = compute(load("icelake"))
    assert icl.level2["Backend Bound"] == {"Memory Bound": 20.0, "Core Bound": 15.0}
    zen = compute(load("zen4"), 25)
    assert zen.level2["Backend Bound"]["Memory Bound"] == pytest.approx(21.0)
    assert zen.level2["Retiring"]["Microcode"] == pytest.approx(2.0)
    assert max(zen.level1, key=zen.level1.__getitem__) == "Retiring"


def test_zen5_uses_eight_slots() -> None:
    counts = load("zen4")
    counts["ls_not_halted_cyc"] = counts["ls_not_halted_cyc"] * 6 / 8  # same slots, 8 wide
    result = compute(counts, 0x1A)
    assert result.method == "amd-zen5"
    assert sum(result.level1.values()) == pytest.approx(100.0, abs=1e-6)


def test_no_counters_is_unavailable_with_evidence() -> None:
    result = compute(load("nocounters"))
    assert not result.available
    assert "cycles" in result.evidence


def test_measure_on_this_machine() -> None:
    caps = probe()
    result = measure([1], 0.2, caps)
    if caps.has("hardware counters"):
        assert result.available
        assert sum(result.level1.values()) == pytest.approx(100.0, abs=0.01)
    else:
        assert not result.available
        assert "not supported" in result.evidence and "TMAM" in result.evidence


def test_software_split_of_the_working_threads() -> None:
    threads = [
        ThreadStat(1, "a", 50, 45, 5, 30, 0, 20),
        ThreadStat(2, "b", 0, 0, 0, 1, 9, 90),
        ThreadStat(3, "idle", 0, 0, 0, 0, 0, 100),  # asleep throughout: left out
    ]
    split = software_split(threads)
    assert sum(split.values()) == pytest.approx(100.0, abs=0.05)
    assert split["on CPU"] == 25.0 and split["run queue"] == 15.5 and split["sleep"] == 55.0


def split_events(text: str) -> list[str]:
    """perf's -e list: commas inside cpu/.../ belong to the event."""
    names, current, inside = [], "", False
    for char in text:
        if char == "/":
            inside = not inside
        if char == "," and not inside:
            names.append(current)
            current = ""
        else:
            current += char
    return [*names, current]


def test_candidate_event_sets() -> None:
    from hone.diagnose.probe import Capabilities
    from hone.diagnose.topdown import candidates

    amd = candidates(Capabilities(cpu_vendor="amd", cpu_family=25))
    assert "ex_ret_ops" in amd[0] and "cmask=0x6" in amd[0] and "cmask" not in amd[1]
    # Every set, parsed back, holds a complete level 1: compute() would accept its counts.
    for caps in (Capabilities(cpu_vendor="amd", cpu_family=25), Capabilities(cpu_vendor="intel")):
        for events in candidates(caps):
            names = split_events(events.strip("{}"))
            counts = dict.fromkeys(names, 1.0)
            counts[names[0]] = 10.0  # cycles or slots larger than the parts
            assert compute(counts, caps.cpu_family).available, events
