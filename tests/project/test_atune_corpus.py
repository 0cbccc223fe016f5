"""Every YAML file of A-Tune's example corpus either loads or gets one clear line."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from hone.errors import HoneError
from hone.optimizers import make_optimizer
from hone.project import load_project
from hone.space import IntRange, Ordinal
from hone.tune.check import check_project

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "atune-corpus" / "examples"
FILES = sorted(CORPUS.rglob("*.yaml"))


def test_corpus_is_there() -> None:
    assert len(FILES) >= 50


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_each_file_loads_or_names_file_and_line(path: Path) -> None:
    out = io.StringIO()
    try:
        check_project(Console(file=out, width=200), str(path), None, None)
    except HoneError as exc:
        message = str(exc)
        assert "\n" not in message
        assert str(path) in message
        return
    text = out.getvalue()
    assert "A-Tune server file" in text or "A-Tune client file" in text
    if "server" in text.splitlines()[0]:
        assert "type and range" in text
    else:
        assert "goal: " in text and "benchmark: " in text


def test_broken_corpus_files_report_line() -> None:
    with pytest.raises(HoneError) as info:
        load_project(CORPUS / "iozone")
    assert info.value.line == 21 and "duplicate key" in str(info.value)
    with pytest.raises(HoneError) as info:
        load_project(CORPUS / "ffmpeg")
    assert "ffmpeg_client.yaml:11" in str(info.value) or "ffmpeg_server.yaml" in str(info.value)


def test_a_broken_file_beside_the_project_loaded_is_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """redis/ holds two projects and one of them does not parse: the other loads, and the
    broken one is reported (it may be the one the user meant), never passed over in silence."""
    assert load_project(CORPUS / "redis").name == "redis"
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and all(line.startswith("hone: warning: ") for line in lines)
    assert "redis_benchmark_server.yaml:" in lines[0] and "invalid YAML" in lines[0]
    # and the loaded one's knob that sets what another sets (A-Tune's copy and paste)
    assert "redis_server.yaml:95: knob 'sys.kernel.mm.transparent_huagepage' has the" in lines[1]


def test_discrete_int_keeps_order_and_step() -> None:
    project = load_project(CORPUS / "memcached")
    domain = project.knob("max_conn").domain
    assert domain == IntRange(896, 1536, 64)
    assert project.knob("max_conn").restart is True
    assert project.tuning.engine == "gbrt" and project.tuning.random_starts == 10
    assert project.metrics[0].direction == "maximize"


def test_large_integers_stay_exact() -> None:
    project = load_project(CORPUS / "kafka")
    domain = project.knob("kafka.buffer_memory").domain
    assert isinstance(domain, IntRange)
    assert (domain.low, domain.step) == (33554432, 1048576)
    assert domain.contains(33554432 + 3 * 1048576)


def test_pairs_and_items_make_ordered_values(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "s.yaml").write_text(
        'project: "p"\nobject:\n  - name: "x"\n    info:\n      get: "echo 4"\n'
        '      set: "true"\n      type: "discrete"\n      dtype: "int"\n'
        "      scope: [1, 4, 100, 200]\n      step: 2\n      items: [4096]\n"
    )
    (tmp_path / "p" / "c.yaml").write_text(
        'project: "p"\nbenchmark: "echo 1"\nevaluations:\n  - name: "v"\n    info:\n'
        '      get: "echo 1"\n      type: "positive"\n      weight: 100\n'
    )
    project = load_project(tmp_path / "p")
    domain = project.knob("x").domain
    assert isinstance(domain, Ordinal)
    assert domain.choices[:3] == (1, 3, 100) and domain.choices[-1] == 4096
    assert list(domain.choices) == sorted(domain.choices)
    assert project.metrics[0].direction == "minimize"


#: Every engine name an A-Tune client YAML may hold (atune-compat.md).
ATUNE_ENGINES = ("random", "forest", "gbrt", "extraTrees", "bayes", "abtest", "lhs", "tpe",
                 "gridsearch", "traverse", "ppo", "Bayesian_Transfer")  # fmt: skip


@pytest.mark.parametrize("engine", ATUNE_ENGINES)
def test_every_atune_engine_name_loads_and_makes_an_optimiser(tmp_path: Path, engine: str) -> None:
    for source in (CORPUS / "memcached").glob("*.yaml"):
        text = source.read_text().replace('engine : "gbrt"', f'engine : "{engine}"')
        (tmp_path / source.name).write_text(text)
    project = load_project(tmp_path)
    assert project.tuning.engine == engine
    make_optimizer(engine, project.space())  # as `hone tune` checks the engine


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ('feature_filter_engine: "lsh"', "feature_filter_engine: must be one of random, abtest"),
        ('feature_selector: "wfes"', "feature_selector: must be one of wefs, vrfs, not 'wfes'"),
        ('eval_fluctuation: "0.1%"', "eval_fluctuation: must be a number"),
    ],
)
def test_a_typo_in_a_client_key_hone_does_not_use_is_refused(
    tmp_path: Path, line: str, words: str
) -> None:
    """Keys hone reads only for their meaning were taken whatever they held: a typo in one
    went unnoticed, as A-Tune's own engine would not let it."""
    for source in (CORPUS / "compress").glob("*.yaml"):
        (tmp_path / source.name).write_text(source.read_text())
    client = tmp_path / "compress_client.yaml"
    client.write_text(client.read_text() + line + "\n")
    with pytest.raises(HoneError, match=re.escape(f"compress_client.yaml:20: {words}")):
        load_project(tmp_path)


def test_an_evaluation_threshold_must_be_a_number(tmp_path: Path) -> None:
    for source in (CORPUS / "compress").glob("*.yaml"):
        (tmp_path / source.name).write_text(source.read_text())
    client = tmp_path / "compress_client.yaml"
    client.write_text(client.read_text().replace("weight: 80", "weight: 80\n        threshold: x"))
    with pytest.raises(HoneError, match=r"compress_client\.yaml:20: threshold: must be a number"):
        load_project(tmp_path)


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        (
            '- "gzip"',
            '- "gzip"\n        ref : "lz4"',
            "ref: knob 'compressMethod': 'lz4' is not in",
        ),
        ("- 9\n", '- 9\n        ref : "12"\n', "ref: knob 'compressLevel': '12' is not in"),
    ],
)
def test_a_reference_outside_the_knobs_values_is_refused(
    tmp_path: Path, old: str, new: str, words: str
) -> None:
    """`ref` is the baseline every trial starts from: one the knob cannot take was set as
    such, and the baseline measured a value no trial could reach."""
    for source in (CORPUS / "compress").glob("*.yaml"):
        (tmp_path / source.name).write_text(source.read_text())
    server = tmp_path / "compress_server.yaml"
    server.write_text(server.read_text().replace(old, new, 1))
    with pytest.raises(HoneError, match=re.escape(words)):
        load_project(tmp_path)
