"""The tuner harness reads any tabular task in the shared format, failures included, and scores
what a tuner would deploy by the truth."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmarks.tuners import __main__ as harness_main
from benchmarks.tuners.harness import crashed, run
from benchmarks.tuners.suite import HOLDOUT
from benchmarks.tuners.tabular_io import TaskError
from benchmarks.tuners.tasks import TabularTask

YAML = """\
knobs:
  threads: {type: int, values: [1, 2, 4, 8]}
  mode: {type: categorical, values: [fast, "safe mode"]}
  cache: {type: bool, values: [false, true]}
objective: {metric: ops, direction: maximize}
default: {threads: 2, mode: fast, cache: false}
"""


def write_task(tmp_path: Path) -> Path:
    rows = ["threads,mode,cache,ops,lat,rep,load1"]
    for threads in (1, 2, 4, 8):
        for mode in ("fast", "safe mode"):
            for cache in ("False", "True"):
                for rep in range(2):
                    ops = 100 * threads if threads < 8 else ""  # 8 threads: a cliff
                    if mode == "safe mode":
                        ops = "" if rep == 0 else 10  # fails half the time: still a truth
                    if cache == "True" and ops != "":
                        ops = float(ops) + 5 + rep
                    rows.append(f"{threads},{mode},{cache},{ops},1.0,{rep},0.5")
    (tmp_path / "t.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "t.yaml").write_text(YAML)
    return tmp_path / "t.yaml"


def test_truths_failures_and_noise(tmp_path: Path) -> None:
    task = TabularTask(write_task(tmp_path))
    cfg = {"threads": 4, "mode": "fast", "cache": True}
    assert task.truth(cfg) == 405.5
    assert task.truth({"threads": 8, "mode": "fast", "cache": False}) is None
    assert task.truth({"threads": 2, "mode": "safe mode", "cache": False}) == 10.0  # 1 of 2 fail
    assert task.optimum() == 405.5 and not task.minimize
    rng = np.random.default_rng(0)
    assert {task.measure(cfg, rng) for _ in range(30)} == {405.0, 406.0}
    assert task.space.defaults == {"threads": 2, "mode": "fast", "cache": False}
    # Rows spread by 0 (cache off) and 0.17-0.67 % (cache on): median 0.085 %. 400 (4 threads,
    # cache off) is 1.4 % from 405.5; the next, 205.5 (2 threads), 49.3 %.
    assert task.resolution() == (
        "Noise: the rows of one configuration spread by 0.1 % (median CV), so a truth (the "
        "mean of 2 rows) is known to about 0.1 %; 2 configuration(s) within 2 % of the "
        "optimum, the next at 49.3 %."
    )


def test_yaml_words_that_yaml_1_1_reads_as_booleans_stay_values(tmp_path: Path) -> None:
    """The format's own example lists a categorical `[fast, safe, off]`: `off` (and on, yes,
    no) is the CSV's text, not a boolean, or the configurations asked for have no rows."""
    (tmp_path / "w.yaml").write_text(
        "knobs:\n  mode: {type: categorical, values: [fast, safe, off]}\n"
        "  ratio: {type: float, values: [0.5, 1.0]}\n"
        "objective: {metric: ops, direction: maximize}\ndefault: {mode: off, ratio: 1.0}\n"
    )
    rows = ["mode,ratio,ops"]
    rows += [
        f"{m},{r},{10 * i + j}"
        for i, m in enumerate(["fast", "safe", "off"])
        for j, r in enumerate(["0.5", "1.00"])
    ]
    (tmp_path / "w.csv").write_text("\n".join(rows) + "\n")
    task = TabularTask(tmp_path / "w.yaml")
    assert task.space.defaults == {"mode": "off", "ratio": 1.0}
    assert task.truth({"mode": "off", "ratio": 1.0}) == 21.0 and task.optimum() == 21.0
    assert task.measure({"mode": "safe", "ratio": 0.5}, np.random.default_rng(0)) == 10.0


def test_an_optimum_of_zero_and_a_failing_default(tmp_path: Path) -> None:
    """A count of errors, minimised: gaps are relative to the median's distance from 0, and
    a default that always fails is scored against the worst configuration."""
    (tmp_path / "z.yaml").write_text(
        "knobs:\n  a: {type: int, values: [1, 2, 3, 4]}\n"
        "objective: {metric: errors, direction: minimize}\ndefault: {a: 1}\n"
    )
    rows = ["a,errors", "1,", "1,", "2,8", "2,9", "3,0", "3,0", "4,4", "4,5"]
    (tmp_path / "z.csv").write_text("\n".join(rows) + "\n")
    task = TabularTask(tmp_path / "z.yaml")
    assert task.optimum() == 0.0 and task.scale() == 4.5  # the median of 0, 4.5 and 8.5
    result = run(task, "auto", 0, 8)
    assert all(0.0 <= r <= 1.0 for r in result.regrets) and result.gaps[-1] == 0.0


def test_a_task_where_only_the_default_works_has_nothing_to_gain(tmp_path: Path) -> None:
    """Every other configuration fails: the default is both the optimum and the worst, so
    every regret is 0 but a failure region's, and a crashed run (left at the default) too."""
    (tmp_path / "d.yaml").write_text(
        "knobs:\n  a: {type: int, values: [1, 2, 3]}\n"
        "objective: {metric: ops, direction: maximize}\ndefault: {a: 1}\n"
    )
    (tmp_path / "d.csv").write_text("a,ops\n1,50\n1,52\n2,\n3,\n")
    task = TabularTask(tmp_path / "d.yaml")
    result = run(task, "auto", 0, 6)
    assert result.regrets == [0.0] * 6 and result.gaps == [0.0] * 6
    assert crashed(task, "auto", 0, 6, "MemoryError").regrets == [0.0] * 6
    assert "no other" in task.resolution()


def test_a_mistake_in_a_task_is_one_line_naming_file_line_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    task = write_task(tmp_path)
    table = tmp_path / "t.csv"
    lines = table.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if "safe mode" in line)
    lines[index] = lines[index].replace("safe mode", "slow mode")
    table.write_text("\n".join(lines) + "\n")
    argv = ["x", "--task", str(task), "--tuners", "random", "--output", str(tmp_path / "x.md")]
    monkeypatch.setattr(sys, "argv", argv)  # in process: a python -m took 3-7 s to start
    with pytest.raises(SystemExit) as done:
        harness_main.main()
    assert done.value.code == 2  # bad input, as for a bad option
    expected = f"{table}:{index + 1}: mode: 'slow mode' is not one of its values"
    assert capsys.readouterr().err == expected + "\n"


@pytest.mark.parametrize("cell", ["nan", "-inf", "NA"])
def test_a_reading_that_is_not_a_finite_number_is_refused_not_read(
    tmp_path: Path, cell: str
) -> None:
    """An empty cell is a failed measurement; `nan` read as a number made a truth NaN."""
    task = write_task(tmp_path)
    table = tmp_path / "t.csv"
    lines = table.read_text().splitlines()
    fields = lines[3].split(",")  # threads, mode, cache, ops, ...
    fields[3] = cell
    lines[3] = ",".join(fields)
    table.write_text("\n".join(lines) + "\n")
    with pytest.raises(TaskError, match=f"^{table}:4: ops: '{cell}' is not a"):
        TabularTask(task)


def test_numbers_in_yaml_1_2_spelling_and_whole_numbers(tmp_path: Path) -> None:
    """`1e3` is a number in YAML 1.2 and a string to PyYAML; an int knob's values are whole."""
    (tmp_path / "n.yaml").write_text(
        "knobs: {conns: {type: int, values: [1e1, 1e2]}, ratio: {type: float, values: [5e-1, 1]}}\n"
        "objective: {metric: ops, direction: maximize}\ndefault: {conns: 10, ratio: 1}\n"
    )
    rows = ["conns,ratio,ops", "10,0.5,1", "10,1.0,2", "100,0.5,3", "100,1,4"]
    (tmp_path / "n.csv").write_text("\n".join(rows) + "\n")
    task = TabularTask(tmp_path / "n.yaml")
    assert task.truth({"conns": 100, "ratio": 1.0}) == 4.0 and task.optimum() == 4.0
    spec = (tmp_path / "n.yaml").read_text().replace("[1e1, 1e2]", "[10, 2.5]")
    (tmp_path / "n.yaml").write_text(spec)
    with pytest.raises(TaskError, match=r"n.yaml:1: knobs.conns.values: must be whole numbers$"):
        TabularTask(tmp_path / "n.yaml")


@pytest.mark.timeout(20)  # the report's noise line took a minute here (quadratic), now 1 s
def test_a_grid_of_sixty_thousand_configurations_is_read_and_described(tmp_path: Path) -> None:
    knobs = {f"k{i}": range(6) for i in range(6)}  # 6^6 = 46,656 configurations
    spec = "knobs:\n" + "".join(
        f"  {name}: {{type: int, values: [0, 1, 2, 3, 4, 5]}}\n" for name in knobs
    )
    spec += "objective: {metric: ops, direction: minimize}\n"
    spec += "default: {" + ", ".join(f"{name}: 0" for name in knobs) + "}\n"
    (tmp_path / "g.yaml").write_text(spec)
    grid = np.stack(np.meshgrid(*[np.arange(6)] * 6, indexing="ij"), -1).reshape(-1, 6)
    ops = 10 + ((grid - 2) ** 2).sum(axis=1)
    lines = [",".join(knobs) + ",ops"]
    lines += [",".join(map(str, row)) + f",{value}" for row, value in zip(grid, ops, strict=True)]
    (tmp_path / "g.csv").write_text("\n".join(lines) + "\n")
    task = TabularTask(tmp_path / "g.yaml")
    assert (task.optimum(), task.worst(), task.scale()) == (10.0, 10.0 + 6 * 9, 10.0)
    assert "1 configuration(s) within 2 % of the optimum, the next at 10.0 %" in task.resolution()


def test_a_default_whose_baseline_readings_all_failed_is_not_counted_as_measured(
    tmp_path: Path,
) -> None:
    """The default runs one time in two (a truth of 50, the optimum: every other configuration
    fails). In seed 5 its three baseline readings all fail, and the "measured 2 %" column
    still counted it measured from the start."""
    (tmp_path / "f.yaml").write_text(
        "knobs:\n  a: {type: int, values: [1, 2, 3]}\n"
        "objective: {metric: ops, direction: maximize}\ndefault: {a: 1}\n"
    )
    (tmp_path / "f.csv").write_text("a,ops\n1,\n1,50\n2,\n3,\n")
    task = TabularTask(tmp_path / "f.yaml")
    assert run(task, "random", 0, 2).measured == [0.0, 0.0]  # a baseline reading ran
    assert run(task, "auto", 5, 2).measured == [float("inf")] * 2  # a=2, a=3: both fail


def test_harness_scores_the_deployed_configuration(tmp_path: Path) -> None:
    task = TabularTask(write_task(tmp_path))
    found = 0
    for seed in range(5):
        result = run(task, "auto", seed=seed, budget=12)
        assert len(result.regrets) == 12 and len(result.ask_seconds) == 12
        assert all(0.0 <= r <= 1.0 for r in result.regrets)
        assert result.regrets[-1] <= result.regrets[0]
        # the best measured so far only improves, and auto deploys only what it has measured
        assert result.measured == sorted(result.measured, reverse=True)
        assert all(m <= g for m, g in zip(result.measured, result.gaps, strict=True))
        found += result.gaps[-1] < 0.01
    # 16 configurations, the best beside a cliff: auto finds it within 12 in every seed (4 of 5
    # before a grid that mostly fails was explored: docs/optimizers.md)
    assert found == 5, found


def test_peers_run_past_the_size_of_a_small_grid(tmp_path: Path) -> None:
    """16 configurations, 30 evaluations: SMAC runs out of new configurations and measures its
    incumbent again instead of stopping the run."""
    task = TabularTask(write_task(tmp_path))
    result = run(task, "smac-hpo", seed=0, budget=30)
    assert len(result.regrets) == 30
    assert result.regrets[-1] <= result.regrets[0]


def _harness(*args: str) -> None:
    """The harness's command line, run in this process: its imports (SciPy's statistics,
    scikit-learn, Matplotlib; seconds) are paid once for the file, not at every call."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "argv", ["x", "--seeds", "2", "--budget", "8", *args])
        harness_main.main()


def _rows(report: Path, tuner: str) -> list[str]:
    return [line for line in report.read_text().splitlines() if line.startswith(f"| {tuner} |")]


@pytest.mark.slow
def test_a_rerun_takes_the_peers_from_saved_runs(tmp_path: Path) -> None:
    """Save a suite, rerun one tuner against the saved peers, rewrite from saved runs: the
    peer's rows are the saved ones, the report names what ran now."""
    task = str(write_task(tmp_path))
    first, second = tmp_path / "first.md", tmp_path / "second.md"
    saved, rerun = tmp_path / "runs.pkl", tmp_path / "rerun.pkl"
    _harness(
        "--task", task, "--tuners", "auto,random", "--output", str(first), "--save-runs", str(saved)
    )
    _harness(
        "--task",
        task,
        "--tuners",
        "auto",
        "--peers-from",
        str(saved),
        "--output",
        str(second),
        "--save-runs",
        str(rerun),
    )
    assert _rows(second, "random") == _rows(first, "random") != []
    assert "Only auto ran now" in second.read_text()
    rewritten = tmp_path / "again" / second.name  # the same name: the same figure links
    _harness("--task", task, "--from-runs", str(rerun), "--output", str(rewritten))
    assert rewritten.read_text() == second.read_text()
    assert (tmp_path / "again" / "second" / "t.png").exists()  # curves beside the report
    with pytest.raises(SystemExit) as lost:  # its task is a file of the user's: not found
        _harness("--from-runs", str(rerun), "--output", str(tmp_path / "lost.md"))
    assert (
        str(lost.value.code) == f"{rerun}: no task t; give the --task files the runs were made with"
    )
    assert not (tmp_path / "lost.md").exists()
    with pytest.raises(SystemExit) as wrong:
        _harness("--task", task, "--tuners", "auto", "--seeds", "3", "--peers-from", str(saved),
                 "--output", str(tmp_path / "x.md"))  # fmt: skip
    assert "saved with 2 seeds" in str(wrong.value.code)


@pytest.mark.slow
def test_saved_runs_of_a_held_out_system_are_rewritten_without_its_flags(tmp_path: Path) -> None:
    """Runs saved by `--set holdout` are found again by `--from-runs` alone, in their order."""
    table = str(HOLDOUT / "brotli.csv.gz")
    first, again, saved = tmp_path / "first.md", tmp_path / "again" / "first.md", tmp_path / "r.pkl"
    _harness("--set", "holdout", "--task", table, "--tuners", "random", "--output", str(first),
             "--save-runs", str(saved))  # fmt: skip
    _harness("--from-runs", str(saved), "--output", str(again))
    assert again.read_text() == first.read_text()
    assert len(_rows(first, "random")) >= 3  # each noise level's table


@pytest.mark.slow
def test_saved_peers_of_tasks_run_apart_are_merged(tmp_path: Path) -> None:
    """Peers saved by two runs of different tasks (a task added to the suite later) serve one
    rerun together; a task in neither file stops the run and names it."""
    first = write_task(tmp_path)
    second = tmp_path / "u.yaml"
    second.write_text(first.read_text())
    (tmp_path / "u.csv").write_text((tmp_path / "t.csv").read_text())
    saved = {}
    for task in (first, second):
        saved[task] = tmp_path / f"{task.stem}.pkl"
        report = ["--output", str(tmp_path / f"{task.stem}.md")]
        _harness(
            "--task", str(task), "--tuners", "random", *report, "--save-runs", str(saved[task])
        )
    both = ["--task", str(first), "--task", str(second), "--tuners", "auto"]
    merged = tmp_path / "merged.md"
    peers = ["--peers-from", str(saved[first]), "--peers-from", str(saved[second])]
    _harness(*both, *peers, "--output", str(merged))
    text = merged.read_text()
    assert "## t\n" in text and "## u\n" in text
    assert len(_rows(merged, "random")) >= 4  # each task's table and the ranks
    with pytest.raises(SystemExit) as done:
        _harness(*both, "--peers-from", str(saved[first]), "--output", str(tmp_path / "x.md"))
    assert "no saved runs of u" in str(done.value.code)


def test_a_run_out_of_memory_is_scored_as_the_default_and_the_others_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """A-Tune's scikit-optimize GP wanted over 20 GB on a pool table; its run fails alone."""

    def greedy(task, tuner, seed, budget, baseline=True):  # what that peer did, at once
        if tuner == "random":
            np.ones(10**13)  # 80 TB: numpy refuses with MemoryError
        return run(task, tuner, seed, budget, baseline=baseline)

    monkeypatch.setattr(harness_main, "run", greedy)  # the job processes are forked: they see it
    report = tmp_path / "r.md"
    argv = ["x", "--task", str(write_task(tmp_path)), "--tuners", "auto,random", "--seeds", "1"]
    monkeypatch.setattr(sys, "argv", [*argv, "--budget", "6", "--output", str(report)])
    harness_main.main()
    said = capsys.readouterr().err
    assert "random on t, seed 0: out of memory" in said and "scored as the default" in said
    text = report.read_text()
    assert "did not finish, scored as never leaving the default configuration: random on t" in text
    random_row = [row for row in text.splitlines() if row.startswith("| random |")][-1]
    assert "| 1.000 |" in random_row and "nan" not in random_row  # no ask: no time per ask


_JOB = harness_main._job


def _killed_for_random(item):
    """A job whose process the system kills when it runs the random tuner."""
    if item[1] == "random":
        os.kill(os.getpid(), signal.SIGKILL)
    return _JOB(item)


def test_a_job_process_killed_ends_the_benchmark_naming_its_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel's OOM killer took whole job processes; the benchmark then waited for ever."""
    # submitted by name: the forked job processes find the stand-in where the harness looks
    monkeypatch.setattr(harness_main, "_job", _killed_for_random, raising=True)
    argv = ["x", "--task", str(write_task(tmp_path)), "--tuners", "auto,random", "--budget", "4"]
    monkeypatch.setattr(sys, "argv", [*argv, "--output", str(tmp_path / "r.md")])
    with pytest.raises(SystemExit) as ended:
        harness_main.main()
    assert "a job process died" in str(ended.value) and "random seed 0" in str(ended.value)


def test_a_task_named_with_spaces_has_a_working_plot_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Markdown link ends at its first space: `![my task](r/my task.png)` showed no plot."""
    task = write_task(tmp_path)
    for suffix in (".yaml", ".csv"):
        task.with_suffix(suffix).rename(tmp_path / f"my task{suffix}")
    report = tmp_path / "r.md"
    argv = ["x", "--task", str(tmp_path / "my task.yaml"), "--tuners", "random", "--seeds", "1"]
    monkeypatch.setattr(sys, "argv", [*argv, "--budget", "4", "--output", str(report)])
    harness_main.main()
    assert "![my task](r/my%20task.png)" in report.read_text()
    assert (tmp_path / "r" / "my task.png").is_file()


def test_auto_tries_again_a_configuration_whose_only_try_failed(tmp_path: Path) -> None:
    """Eight configurations, each failing in one of its two rows, the best (a=2, y) at twice
    the default's value. At seeds 0 to 2 its first try failed; once every configuration had
    been tried, auto read the measured ones again and again and never tried the optimum
    again (a regret of 0.92 or more to the end). Now it does, and deploys it by 20."""
    (tmp_path / "f.yaml").write_text(
        "knobs:\n  a: {type: int, values: [1, 2, 4, 8]}\n"
        "  m: {type: categorical, values: [x, y]}\n"
        "objective: {metric: ops, direction: maximize}\ndefault: {a: 1, m: x}\n"
    )
    rows = ["a,m,ops"]
    for a in (1, 2, 4, 8):
        for m in ("x", "y"):
            value = 200 if (a, m) == (2, "y") else 100 + a + (m == "y")
            rows += [f"{a},{m},", f"{a},{m},{value}"]
    (tmp_path / "f.csv").write_text("\n".join(rows) + "\n")
    task = TabularTask(tmp_path / "f.yaml")
    for seed in range(3):
        assert run(task, "auto", seed, 20).regrets[-1] == 0.0, seed


def test_the_noise_of_a_table_of_zeros_is_not_said_to_lack_readings(tmp_path: Path) -> None:
    """Every configuration read 0 errors three times: the report said "no configuration has
    two readings", of a table with three of each."""
    (tmp_path / "z.yaml").write_text(
        "knobs:\n  a: {type: int, values: [1, 2]}\n"
        "objective: {metric: errors, direction: minimize}\ndefault: {a: 1}\n"
    )
    (tmp_path / "z.csv").write_text("a,errors\n" + "1,0\n2,0\n" * 3)
    said = TabularTask(tmp_path / "z.yaml").resolution()
    assert said.startswith("Noise: unknown (the configurations read twice or more have a mean")


def test_auto_does_not_read_a_deterministic_grid_again_while_some_is_unmeasured(
    tmp_path: Path,
) -> None:
    """Eight configurations, readings that never vary, the optimum (0) at a corner the model
    gives no chance. At seeds 1 and 4 auto read two measured configurations again and again
    (40 times) and never measured the last two, the optimum among them; now none is read
    more than five times while others remain, and the optimum is deployed by 15."""
    (tmp_path / "z.yaml").write_text(
        "knobs:\n  t: {type: int, values: [1, 2, 4, 8]}\n"
        "  m: {type: categorical, values: [a, b]}\n"
        "objective: {metric: errors, direction: minimize}\ndefault: {t: 1, m: a}\n"
    )
    rows = ["t,m,errors"]
    for t in (1, 2, 4, 8):
        rows += [f"{t},a,{t}"] * 2 + [f"{t},b,{0 if t == 8 else t}"] * 2
    (tmp_path / "z.csv").write_text("\n".join(rows) + "\n")
    task = TabularTask(tmp_path / "z.yaml")
    for seed in (1, 4):
        assert run(task, "auto", seed, 15).regrets[-1] == 0.0, seed
