"""A study shared by `hone worker`s beside a study of `hone tune`, both in a real PostgreSQL
server, compared in the browser: a worker stores each score as its gain in % over its own
machine's baseline (the study's baseline score is 0), so the compare chart must not take that
score as a raw metric to divide by the baseline. Each curve is checked against `hone show
--json`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import BENCH, ROOT, Server, q, shot, start_server
from forked_hone import run_hone
from playwright.sync_api import Page, expect

from benchmarks.tune.postgres import cluster
from benchmarks.web import stop_server


def level_project(folder: Path, name: str) -> Path:
    """Two int knobs in app.conf (0 before tuning); the benchmark scores 100 - (level - 6)²,
    `spare` does nothing; after 3 trials one knob is kept (`tuning.select`)."""
    folder.mkdir(parents=True)
    (folder / "app.conf").write_text("level 0\nspare 0\n")
    (folder / "bench.py").write_text(
        textwrap.dedent("""\
        level = int(open("app.conf").read().split()[1])
        print(f"score: {100 - (level - 6) ** 2}")
        """)
    )
    (folder / "hone.yaml").write_text(
        textwrap.dedent(f"""\
        name: {name}
        knobs:
          level:
            type: int
            range: [1, 9]
            config: {{file: app.conf, format: space, key: level}}
          spare:
            type: int
            range: [1, 3]
            config: {{file: app.conf, format: space, key: spare}}
        benchmark: {{command: {BENCH}, timeout: 20}}
        metrics:
          score: {{pattern: 'score: (\\S+)', direction: maximize}}
        tuning: {{engine: random, budget: 5, baseline: 1, seed: 3, apply: never,
                  select: {{count: 1, trials: 3}}, confirm: {{candidates: 1, rounds: 2}}}}
        """)
    )
    return folder


def hone(home: Path, *args: str) -> subprocess.CompletedProcess:
    result = run_hone(*args, env={**os.environ, "HONE_HOME": str(home)}, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr[-800:]
    return result


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    base = tmp_path_factory.mktemp("workers")
    with cluster("fsync=off") as postgres:
        url = postgres.url
        machines = [level_project(base / name, "fleet") for name in ("m1", "m2")]
        workers = [
            subprocess.Popen(
                [
                    *(sys.executable, "-m", "hone", "worker", str(folder)),
                    *("--storage", url, "--worker-id", folder.name),
                ],
                cwd=ROOT,
                env={**os.environ, "HONE_HOME": str(folder / "home")},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            for folder in machines
        ]
        for worker in workers:
            assert worker.wait(120) == 0, worker.stderr.read()[-800:]  # type: ignore[union-attr]
        solo = level_project(base / "solo", "solo")
        hone(base / "home", "tune", str(solo), "--storage", url, "--no-why")
        process, address = start_server(base / "home", {}, "--storage", url)
        yield Server(address, "", base / "home", {}, process), url
        stop_server(process)


def test_compare_a_worker_study_with_a_tuned_one(page: Page, shared: tuple[Server, str]) -> None:
    server, url = shared
    names = ["fleet#1", "solo#1"]
    shown = {
        name: json.loads(hone(server.home, "show", name, "--storage", url, "--json").stdout)
        for name in names
    }
    assert shown["fleet#1"]["study"]["attrs"]["scores"] == "relative"
    page.goto(server.url + "/#/compare/" + ",".join(q(name) for name in names))
    page.wait_for_selector("body[data-ready=compare]")
    curves = page.evaluate("() => window.honeCharts.compare.data.slice(1)")
    for name, curve in zip(names, curves, strict=True):
        study, trials = shown[name]["study"], shown[name]["trials"]
        base = study["baseline_score"]
        expected, best = [], None
        for trial in (t for t in trials if t["phase"] == "search"):
            if trial["score"] is not None:
                # a worker's score is already its gain in %; a tuned study's is the raw metric
                gain = trial["score"] if name == "fleet#1" else (trial["score"] - base) / base * 100
                best = gain if best is None else max(best, gain)
            expected.append(best)
        drawn = curve[: len(expected)]
        assert drawn == pytest.approx(expected), (name, drawn, expected)
        assert not any(v is not None for v in curve[len(expected) :])
        assert drawn[-1] == pytest.approx(study["best_gain"])
    assert curves[0][-1] is not None and 0 < curves[0][-1] < 100  # 64 → at most 100: +56 %
    shot(page, "compare-workers")


def test_a_shared_study_page_shows_its_workers(page: Page, shared: tuple[Server, str]) -> None:
    server, url = shared
    shown = json.loads(hone(server.home, "show", "fleet#1", "--storage", url, "--json").stdout)
    workers = shown["study"]["workers"]
    assert [w["id"] for w in workers] == ["m1", "m2"]
    page.goto(server.url + "/#/study/" + q("fleet#1"))
    page.wait_for_selector("body[data-ready=study]")
    # no study-wide baseline: each worker's own is the zero of its scores
    expect(page.locator(".facts")).to_contain_text("each worker's own")
    (kept,) = shown["study"]["attrs"]["selection"]["knobs"]
    held = ", ".join(f"{k}={v}" for k, v in shown["study"]["attrs"]["selection"]["held"].items())
    expect(page.locator(".facts")).to_contain_text(f"{kept}; held: {held}")
    card = page.locator("#workers")
    expect(card).to_be_visible()
    expect(card.locator("h2")).to_have_text("Workers (2)")
    for worker in workers:
        row = card.locator(f"tbody tr[data-worker='{worker['id']}']")
        cells = row.locator("td").all_inner_texts()
        assert cells[:5] == [worker["id"], worker["host"], str(worker["pid"]), "finished", "—"]
        score = worker["baseline_metrics"]["score"]
        assert cells[5] == f"score {score:g}", cells  # each machine's own baseline
        assert cells[6].endswith(" %") and cells[7] == ""
    # every trial names the worker that ran it, as `hone show --json` does
    columns = page.locator("#trials thead th").all_inner_texts()
    at = next(i for i, label in enumerate(columns) if label.startswith("worker"))
    drawn = page.locator(f"#trials tbody tr td:nth-child({at + 1})").all_inner_texts()
    expected = [t["worker"] for t in shown["trials"]]
    assert set(expected) == {"m1", "m2"}
    assert sorted(drawn) == sorted(expected)
    # the metric is called "score"; the trial's own score is its gain over its worker's baseline
    expect(page.locator("#trials th[data-key=score]")).to_contain_text("gain (%)")
    expect(page.locator("#trials th[data-key='m:score']")).to_contain_text("score")
    shot(page, "study-workers")

    # a study of one `hone tune` has no workers card and no worker column
    page.goto(server.url + "/#/study/" + q("solo#1"))
    page.wait_for_selector("body[data-ready=study]")
    expect(page.locator("#workers")).to_be_hidden()
    assert not any(
        c.startswith("worker") for c in page.locator("#trials thead th").all_inner_texts()
    )
