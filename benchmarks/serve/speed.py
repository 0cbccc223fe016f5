"""hone serve's two speed targets, measured against a real `hone serve` process:

- the API answers the study list in under 50 ms with 100 studies;
- the page of a 1,000-trial study loads and draws in under 1 s in headless Chromium.

    python -m benchmarks.serve.speed [--studies 100] [--trials 1000] [--repeats 30]

Studies are written directly through `hone.storage.StudyStore` (as a tuning run writes them:
baseline, search and confirm trials with configurations, metrics, failures and timings) into
a temporary HONE_HOME. The page time runs from navigation start (a fresh tab each time, cold
caches of a new browser profile for the first) to the moment the page has drawn the curves,
the parallel coordinates and the trial table (`performance.now()` at that point)."""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path

from benchmarks.web import start_server, stop_server, study_page_loads
from hone.space import Categorical, FloatRange, IntRange, SearchSpace
from hone.space.serialize import domain_to_dict

SPACE = SearchSpace(
    {
        "threads": IntRange(1, 64),
        "buffer_kb": IntRange(4, 4096, log=True),
        "ratio": FloatRange(0.0, 1.0),
        "policy": Categorical(("fifo", "lru", "arc")),
        "batch": IntRange(1, 128),
        "compress": Categorical(("none", "lz4", "zstd")),
    }
)


def make_study(store, project: str, trials: int, rng: random.Random) -> str:  # type: ignore[no-untyped-def]
    """A finished study shaped like a real run: 3 baseline, search, 2 x 3 confirm trials."""
    study = store.create(
        project,
        {
            "engine": "auto",
            "budget": trials,
            "metrics": [
                {"name": "rps", "direction": "maximize", "weight": 1.0},
                {"name": "p99_ms", "direction": "minimize", "weight": 0.0},
            ],
            "knobs": {n: d.describe() for n, d in SPACE.domains.items()},
            "space": {n: domain_to_dict(d) for n, d in SPACE.domains.items()},
        },
    )
    baseline = {"threads": 8, "buffer_kb": 64, "ratio": 0.5, "policy": "lru", "batch": 16,
                "compress": "none"}  # fmt: skip
    scores = []

    def run(config: dict, phase: str, **attrs: object) -> None:
        trial_id = store.start_trial(study, SPACE, config, phase, **attrs)
        if rng.random() < 0.04 and phase == "search":
            store.finish_trial(trial_id, score=None, metrics={}, error="benchmark exited 1: boom",
                               seconds=0.5)  # fmt: skip
            return
        value = 1000 + config["threads"] * 3 - abs(config["batch"] - 40) + rng.gauss(0, 10)
        scores.append(value)
        store.finish_trial(trial_id, score=value, metrics={"rps": value, "p99_ms": 5e4 / value},
                           seconds=1.2, benchmark_seconds=1.0, apply_seconds=0.1)  # fmt: skip

    for _ in range(3):
        run(baseline, "baseline")
    base = statistics.mean(scores)
    store.update(study, baseline_metrics={"rps": base}, baseline_score=base, baseline_cv=1.0)
    for _ in range(trials - 7):
        run(_sample(rng), "search")
    for round_ in range(2):
        for config in (baseline, _sample(rng)):
            run(config, "confirm", round=round_)
    store.update(
        study,
        state="finished",
        result={"outcome": "applied", "reason": "beats the baseline", "best": baseline,
                "best_metrics": {"rps": base}, "gain": {"mean": 4.2, "half_width": 1.1,
                "rounds": 3}, "trials": trials, "failures": 0, "elapsed": 100.0},
    )  # fmt: skip
    return study.name


def _sample(rng: random.Random) -> dict:
    return {
        "threads": rng.randint(1, 64),
        "buffer_kb": int(2 ** rng.uniform(2, 12)),
        "ratio": rng.random(),
        "policy": rng.choice(["fifo", "lru", "arc"]),
        "batch": rng.randint(1, 128),
        "compress": rng.choice(["none", "lz4", "zstd"]),
    }


def time_list(url: str, repeats: int) -> list[float]:
    """Wall time of GET /api/studies, whole request and body read, one connection each."""
    times = []
    for _ in range(repeats + 3):
        started = time.perf_counter()
        with urllib.request.urlopen(url + "/api/studies", timeout=10) as response:
            body = response.read()
        times.append((time.perf_counter() - started) * 1000)
    assert body.startswith(b"[")
    return times[3:]  # the first requests warm the connection pool and imports


def time_page(url: str, study: str, repeats: int) -> list[float]:
    """ms from navigation to the study page drawn, per fresh tab."""
    loads = study_page_loads(url, study, repeats, timeout_ms=30_000)
    assert all(load["rows"] >= 1000 for load in loads), loads
    return [load["drawn_ms"] for load in loads]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=100)
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--list-trials", type=int, default=30, help="trials per listed study")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--page-repeats", type=int, default=7)
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="hone-bench-serve-"))
    os.environ["HONE_HOME"] = str(home)
    from hone.storage import StudyStore

    rng = random.Random(7)
    store = StudyStore()
    started = time.monotonic()
    big = make_study(store, "big", args.trials, rng)
    for i in range(args.studies - 1):
        make_study(store, f"svc{i % 10}", args.list_trials, rng)
    print(f"made {args.studies} studies in {time.monotonic() - started:.1f} s")
    process, url = start_server(home)
    try:
        listed = time_list(url, args.repeats)
        page = time_page(url, big, args.page_repeats)
    finally:
        stop_server(process)
        shutil.rmtree(home, ignore_errors=True)
    quantiles = statistics.quantiles(listed, n=20)
    print(
        f"GET /api/studies, {args.studies} studies: median {statistics.median(listed):.1f} ms, "
        f"p95 {quantiles[-1]:.1f} ms, min {min(listed):.1f} ms ({args.repeats} requests)"
    )
    print(
        f"study page, {args.trials} trials, load to drawn: median {statistics.median(page):.0f} ms"
        f", first (cold) {page[0]:.0f} ms, max {max(page):.0f} ms ({args.page_repeats} loads)"
    )


if __name__ == "__main__":
    main()
