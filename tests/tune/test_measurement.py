"""Measurement quality: a placebo knob on a benchmark that varies by 5 % never wins, a CPU hog
started in the middle of a study is seen and its reading measured again, and the noise and the
gain the confirmation can see are known before the search."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.tune.placebo import write_project
from hone.errors import HoneError
from hone.project import load_project
from hone.storage import StudyStore
from hone.tune.console import Reporter
from hone.tune.records import TuneOptions
from hone.tune.runner import Tuner

HOG = """\
import os, time
end = time.time() + 5
while time.time() < end and not os.path.exists("hog.stop"):
    sum(range(10000))
"""

HOG_BENCH = f"""\
import os, subprocess, sys, time
iteration, at = int(os.environ["ITERATION"]), int(os.environ["HOG_AT"])
if iteration == at:  # a busy neighbour in its own session, outside hone's process tree
    subprocess.Popen([sys.executable, "-c", {HOG!r}], start_new_session=True)
    time.sleep(0.1)
elif iteration == at + 1:
    open("hog.stop", "w").close()
    time.sleep(0.1)
started = time.perf_counter()
total = sum(range(3_000_000))
print(f"ops: {{3_000_000 / (time.perf_counter() - started):.0f}}")
"""


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_a_placebo_never_wins(tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLACEBO_SEED", str(seed))
    path = write_project(tmp_path, confirm="{candidates: 2, rounds: 3}")
    result = Tuner(load_project(path), Reporter(), TuneOptions(why=False)).run()
    assert result.outcome == "restored", result.reason
    assert (tmp_path / "placebo.conf").read_text() == "placebo = one\n"
    quality = StudyStore().find("placebo").attrs["quality"]
    assert 0.5 < quality["cv"] < 15 and quality["rounds"] == 3
    assert quality["detectable_max"] < quality["detectable"]


def test_min_detectable_raises_rounds_or_stops_before_any_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLACEBO_SEED", "7")
    path = write_project(tmp_path, budget=1, confirm="{candidates: 1, rounds: 3}")
    with pytest.raises(HoneError) as caught:
        Tuner(load_project(path), Reporter(), TuneOptions(min_detectable=1.0, why=False)).run()
    message = str(caught.value)
    assert message.startswith("stopped before any change") and "--max-repeats" in message
    store = StudyStore()
    trials = store.trials(store.find("placebo"))
    # no knob was ever changed: baseline readings alone (one a busy neighbour disturbed is
    # kept as `disturbed` and measured again), all of one configuration
    phases = {t.phase for t in trials}
    assert "baseline" in phases and phases <= {"baseline", "disturbed"}, phases
    assert all(t.config == trials[0].config for t in trials)
    assert (tmp_path / "placebo.conf").read_text() == "placebo = one\n"

    Tuner(load_project(path), Reporter(), TuneOptions(min_detectable=12.0, why=False)).run()
    quality = store.find("placebo").attrs["quality"]
    assert quality["min_detectable"] == 12.0
    assert 3 < quality["rounds"] <= 10 and quality["detectable"] <= 12.0


def test_a_cpu_hog_mid_study_is_seen_and_measured_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOG_AT", "5")  # trials 1-3 are the baseline, 4 on the search
    path = write_project(tmp_path, HOG_BENCH, budget=3, confirm="{candidates: 1, rounds: 2}")
    notes: list[str] = []
    reporter = Reporter()
    reporter.note = notes.append  # type: ignore[method-assign]
    result = Tuner(load_project(path), reporter, TuneOptions(apply="never", why=False)).run()
    trials = StudyStore().trials(StudyStore().find("placebo"))
    assert all({"load1", "steal_pct", "others_cpu"} <= set(t.machine or {}) for t in trials)
    hogged = trials[4]  # the fifth reading (ITERATION 5)
    assert "other processes used" in (hogged.disturbed or ""), [t.machine for t in trials]
    if hogged.phase == "disturbed":  # measured again at once, same configuration, counted instead
        again = trials[5]
        assert again.phase == "search" and again.config == hogged.config
    else:  # the reading before was disturbed too (a busy neighbour): this was its one re-reading
        assert trials[3].phase == "disturbed" and trials[3].config == hogged.config
    assert result.disturbed >= 1
    # the note names the reading taken again: it is printed after the previous trial's line
    named = ", ".join(f"{k}={v}" for k, v in hogged.config.items())
    assert any(n.startswith(f"disturbed reading of {named} (other processes") for n in notes)


def test_the_looks_of_a_sequential_confirmation_spend_at_most_a_95_percent_error() -> None:
    from hone.tune.confirm import Plan, rounds_for, rounds_needed

    for planned, most in [(3, 10), (2, 2), (3, 3), (5, 40), (4, 9)]:
        plan = Plan(planned, most)
        levels = [plan.level(r) for r in range(1, most + 1)]
        one_sided = sum((100 - level) / 200 for level in levels if level is not None)
        assert one_sided <= 0.025 + 1e-12, (planned, most, levels)
        assert plan.level(planned) is not None and plan.level(most) is not None
    assert Plan(3, 10).extension_looks() == [6, 10]
    assert rounds_for(5.0, 40.0, 3, 10) == 3 and rounds_for(5.0, 3.0, 3, 10) is None
    needed = rounds_needed(5.0, 3.0)
    assert needed is not None and rounds_for(5.0, 3.0, 3, needed) == needed
