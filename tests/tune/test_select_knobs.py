"""Parameter selection (A-Tune's feature_filter_*, hone's `select`): after some trials only the
knobs that matter are searched, the others held at the best configuration's values."""

from __future__ import annotations

import textwrap
from dataclasses import replace
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


def test_atune_selection_without_feature_filter_iters_waits_for_trials(tmp_path: Path) -> None:
    """A-Tune's key_parameters_select_variant names no feature_filter_iters: ranking the knobs
    before any trial kept the first ones listed, whatever they did."""
    folder = tmp_path / "variant"
    folder.mkdir()
    objects = ""
    for name in "abc":
        (tmp_path / f"{name}.txt").write_text("2\n")
        objects += (
            f'  - name: "{name}"\n    info:\n      get: "cat {name}.txt"\n'
            f'      set: "echo $value > {name}.txt"\n      type: "continuous"\n'
            f'      scope: [1, 9]\n      dtype: "int"\n'
        )
    (folder / "variant_server.yaml").write_text(f'project: "variant"\nobject:\n{objects}')
    (folder / "variant_client.yaml").write_text(
        textwrap.dedent(
            """\
            project: "variant"
            engine: "random"
            iterations: 16
            feature_filter_engine: "traverse"
            feature_filter_cycle: 1
            feature_filter_count: 1
            benchmark: 'c=$(cat c.txt); echo "v $(( 100 - (c - 7) * (c - 7) ))"'
            evaluations:
              - name: "v"
                info: {get: "echo '$out' | awk '{print $2}'", type: "negative", weight: 100}
            """
        )
    )
    project = load_project(folder)
    project.tuning = replace(
        project.tuning, baseline_repeats=1, apply="never", seed=0, confirm_rounds=2
    )
    reporter = Notes()
    Tuner(project, reporter, TuneOptions(why=False)).run()
    assert [n for n in reporter.notes if n.startswith("kept")] == [
        "kept the 1 knobs that matter most: c"
    ]
    store = StudyStore()
    search = [t for t in store.trials(store.find("variant")) if t.phase == "search"]
    assert len({(t.config["a"], t.config["b"]) for t in search[:8]}) > 1  # searched
    assert len({(t.config["a"], t.config["b"]) for t in search[8:]}) == 1  # then held
