"""Parameter selection (A-Tune's feature_filter_*, hone's `select`): after some trials only the
knobs that matter are searched, the others held at the best configuration's values."""

from __future__ import annotations

import io
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from reporters import Notes
from rich.console import Console

from hone.errors import Stop
from hone.project import load_project
from hone.storage import StudyStore
from hone.tune.records import TuneOptions
from hone.tune.runner import Tuner
from hone.tune.views import show_study


def abc_project(folder: Path, name: str, budget: int, select_at: int) -> Path:
    """Knobs a, b, c (files a.txt ...: 2 before tuning); only a moves the score, best at 7."""
    for knob in "abc":
        (folder / f"{knob}.txt").write_text("2\n")
    knobs = "".join(
        f"  {n}: {{type: int, range: [1, 9], shell: {{get: cat {n}.txt, "
        f"set: 'echo \"$value\" > {n}.txt'}}}}\n"
        for n in "abc"
    )
    (folder / "hone.yaml").write_text(
        f"name: {name}\nknobs:\n"
        + knobs
        + textwrap.dedent(
            f"""\
        benchmark: {{command: 'echo "v $(( 100 - ($(cat a.txt) - 7) * ($(cat a.txt) - 7) ))"'}}
        metrics: {{v: {{pattern: 'v (\\S+)', direction: maximize}}}}
        tuning: {{engine: random, budget: {budget}, baseline: 1, apply: never, seed: 0,
                 select: {{count: 1, trials: {select_at}}},
                 confirm: {{candidates: 1, rounds: 2}}}}
        """
        )
    )
    return folder / "hone.yaml"


def test_only_the_knob_that_matters_is_searched_after_selection(tmp_path: Path) -> None:
    path = abc_project(tmp_path, "select-test", 16, 10)
    reporter = Notes()
    result = Tuner(load_project(path), reporter, TuneOptions(why=False)).run()
    kept = [note for note in reporter.notes if note.startswith("kept")]
    assert kept == ["kept the 1 knobs that matter most: a"]
    store = StudyStore()
    study = store.find("select-test")
    search = [t for t in store.trials(study) if t.phase == "search"]
    later = search[10:]
    assert len({(t.config["b"], t.config["c"]) for t in later}) == 1  # held
    # kept with the study: a resumed run searches the same knob with the same held values
    held = study.attrs["selection"]["held"]
    assert study.attrs["selection"]["knobs"] == ["a"]
    assert (held["b"], held["c"]) == (later[0].config["b"], later[0].config["c"])
    shown = Console(file=io.StringIO(), width=200)
    show_study(shown, "select-test", None)
    assert f"knobs kept: a; held: b={held['b']}, c={held['c']}" in shown.file.getvalue()
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


class StopAfter(Notes):
    """Stops the run (as SIGTERM does) once `count` search trials are done."""

    def __init__(self, count: int) -> None:
        super().__init__()
        self.count = count

    def trial(self, done: int, total: int, run: object) -> None:
        if done == self.count:
            raise Stop


def test_a_resumed_study_keeps_its_selection(tmp_path: Path) -> None:
    path = abc_project(tmp_path, "select-resume", 14, 6)
    project = load_project(path)
    with pytest.raises(Stop):
        Tuner(project, StopAfter(8), TuneOptions(why=False)).run()
    store = StudyStore()
    study = store.find("select-resume")
    (chosen,) = study.attrs["selection"]["knobs"]
    # the stored selection is the one a resumed run goes on with, not one made again from
    # the same trials: here it is changed to another knob
    other = next(n for n in "abc" if n != chosen)
    held = {n: 3 + i for i, n in enumerate(n for n in "abc" if n != other)}
    store.update(study, selection={"knobs": [other], "held": held})
    reporter = Notes()
    Tuner(project, reporter, TuneOptions(why=False, resume=True)).run()
    assert f"kept the 1 knobs that matter most: {other}" in reporter.notes
    search = [t for t in store.trials(store.find("select-resume")) if t.phase == "search"]
    assert len(search) == 14
    assert all({n: t.config[n] for n in held} == held for t in search[8:])
    assert len({t.config[other] for t in search[8:]}) > 1
