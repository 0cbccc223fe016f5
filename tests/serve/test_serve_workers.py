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
from playwright.sync_api import Page

from benchmarks.tune.postgres import cluster
from benchmarks.web import stop_server


def level_project(folder: Path, name: str) -> Path:
    """One int knob in app.conf (0 before tuning); the benchmark scores 100 - (level - 6)²."""
    folder.mkdir(parents=True)
    (folder / "app.conf").write_text("level 0\n")
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
        benchmark: {{command: {BENCH}, timeout: 20}}
        metrics:
          score: {{pattern: 'score: (\\S+)', direction: maximize}}
        tuning: {{engine: random, budget: 5, baseline: 1, seed: 3, apply: never,
                  confirm: {{candidates: 1, rounds: 2}}}}
        """)
    )
    return folder


def hone(home: Path, *args: str) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, "-m", "hone", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "HONE_HOME": str(home)},
    )
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
