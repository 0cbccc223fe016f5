"""`confirm: {candidates: 0}` runs no confirmation round: the study ends after its search with
nothing confirmed, so nothing is applied and every knob is back (it once confirmed one
candidate, as `candidates: 1` does)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from hone.project import load_project
from hone.storage import StudyStore
from hone.tune.console import Reporter
from hone.tune.records import TuneOptions
from hone.tune.runner import Tuner


def test_no_candidate_means_no_confirmation_and_nothing_applied(tmp_path: Path) -> None:
    (tmp_path / "level.txt").write_text("1\n")
    (tmp_path / "hone.yaml").write_text(
        textwrap.dedent(
            """\
            name: no-confirm
            knobs:
              level: {type: int, range: [1, 9], shell: {get: cat level.txt,
                      set: 'echo "$value" > level.txt'}}
            benchmark:
              command: 'echo "score $(cat level.txt)"'
            metrics:
              score: {pattern: 'score (\\d+)', direction: maximize}
            tuning: {engine: random, budget: 3, baseline: 1, apply: always, seed: 0,
                     confirm: {candidates: 0, rounds: 2}}
            """
        )
    )
    Tuner(load_project(tmp_path / "hone.yaml"), Reporter(), TuneOptions(why=False)).run()
    store = StudyStore()
    study = store.find("no-confirm")
    phases = [t.phase for t in store.trials(study)]  # (and "disturbed": measured again)
    assert "confirm" not in phases and phases.count("search") == 3, phases
    assert study.attrs["result"]["outcome"] == "restored", study.attrs["result"]
    assert (tmp_path / "level.txt").read_text() == "1\n"
