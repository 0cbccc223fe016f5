"""hone's own overhead per trial: everything a trial costs except the benchmark command itself
(asking the optimiser, setting and verifying knobs, storing the trial, printing), with 50 knobs,
measured around trial 200. Target: median below 50 ms.

    python -m benchmarks.tune.overhead [--knobs 50] [--trials 220] [--engine auto]

The knobs are 50 keys of one real INI file (the `config` actuator: atomic rewrite and read-back
per set), the benchmark is a trivial awk command that scores the file (so the search has a
signal to follow, as in real use), and every trial is stored in SQLite as usual."""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import tempfile
import textwrap
import time
from pathlib import Path


def write_project(folder: Path, knobs: int, trials: int, engine: str) -> Path:
    (folder / "app.ini").write_text(
        "[app]\n" + "".join(f"k{i} = {i % 10 + 1}\n" for i in range(knobs))
    )
    knob_lines = "".join(
        f"  k{i}: {{type: int, range: [1, 64], config: {{file: app.ini, format: ini, "
        f"section: app, key: k{i}, restart: false}}}}\n"
        for i in range(knobs)
    )
    project = folder / "hone.yaml"
    project.write_text(
        "name: overhead\nknobs:\n"
        + knob_lines
        + textwrap.dedent(f"""\
            benchmark:
              command: >-
                awk -F' = ' '/^k/ {{s -= ($2 - 20) ^ 2}} END {{print "score", s}}' app.ini
            metrics:
              score: {{pattern: 'score (\\S+)', direction: maximize}}
            tuning: {{engine: {engine}, budget: {trials}, baseline: 1, apply: never,
                      confirm: {{candidates: 1, rounds: 1}}}}
        """)
    )
    return project


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--knobs", type=int, default=50)
    parser.add_argument("--trials", type=int, default=220)
    parser.add_argument("--engine", default="auto")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        os.environ["HONE_HOME"] = str(folder / "state")
        from hone.project import load_project
        from hone.storage import StudyStore
        from hone.tune.console import Reporter
        from hone.tune.records import TuneOptions
        from hone.tune.runner import Tuner

        project = load_project(write_project(folder, args.knobs, args.trials, args.engine))
        started = time.perf_counter()
        Tuner(project, Reporter(), TuneOptions()).run()
        wall = time.perf_counter() - started
        store = StudyStore()
        trials = [t for t in store.trials(store.find("overhead")) if t.phase == "search"]
    overheads = []
    for current, following in itertools.pairwise(trials):
        if current.started and following.started and current.benchmark_seconds is not None:
            overheads.append(following.started - current.started - current.benchmark_seconds)
    window = overheads[180:230] or overheads[-50:]
    applying = [t.apply_seconds for t in (trials[180:230] or trials[-50:]) if t.apply_seconds]
    print(f"knobs={args.knobs} trials={len(trials)} engine={args.engine} wall={wall:.1f}s")
    print(
        f"overhead per trial, trials 180-230: median {statistics.median(window) * 1000:.1f} ms,"
        f" max {max(window) * 1000:.1f} ms; all trials: median "
        f"{statistics.median(overheads) * 1000:.1f} ms"
    )
    print(
        "of which setting and verifying the knobs, trials 180-230: median "
        f"{statistics.median(applying) * 1000:.1f} ms"
    )


if __name__ == "__main__":
    main()
