"""Parameter selection (A-Tune's feature_filter_*, hone's `select`): after some trials only the
knobs that matter are searched, the others held at the best configuration's values."""

from __future__ import annotations

import textwrap
from pathlib import Path

from hone.project import load_project
from hone.storage import StudyStore
from hone.tune.console import Reporter
from hone.tune.runner import TuneOptions, Tuner


class Notes(Reporter):
    def __init__(self) -> None:
        super().__init__()
        self.notes: list[str] = []

    def note(self, message: str) -> None:
        self.notes.append(message)


def test_only_the_knob_that_matters_is_searched_after_selection(tmp_path: Path) -> None:
    for name in "abc":
        (tmp_path / f"{name}.txt").write_text("2\n")
    knobs = "".join(
        f"  {n}: {{type: int, range: [1, 9], shell: {{get: cat {n}.txt, "
        f"set: 'echo \"$value\" > {n}.txt'}}}}\n"
        for n in "abc"
    )
    (tmp_path / "hone.yaml").write_text(
        "name: select-test\nknobs:\n"
        + knobs
        + textwrap.dedent(
            """\
        benchmark: {command: 'echo "v $(( 100 - ($(cat a.txt) - 7) * ($(cat a.txt) - 7) ))"'}
        metrics: {v: {pattern: 'v (\\S+)', direction: maximize}}
        tuning: {engine: random, budget: 16, baseline: 1, apply: never, seed: 0,
                 select: {count: 1, trials: 10},
                 confirm: {candidates: 1, rounds: 2}}
        """
        )
    )
    reporter = Notes()
    result = Tuner(load_project(tmp_path / "hone.yaml"), reporter, TuneOptions(why=False)).run()
    kept = [note for note in reporter.notes if note.startswith("kept")]
    assert kept == ["kept the 1 knobs that matter most: a"]
    store = StudyStore()
    search = [t for t in store.trials(store.find("select-test")) if t.phase == "search"]
    later = search[10:]
    assert len({(t.config["b"], t.config["c"]) for t in later}) == 1  # held
    assert result.best is not None and result.best["a"] == 7
