"""Wall time of one study run by 1, 2 and 4 `hone worker` processes sharing a PostgreSQL
database. Target: >= 3.5x faster with 4 workers than with 1.

    python -m benchmarks.tune.workers [--trials 40] [--workers 1 2 4] [--sleep 1] [--baseline 3]

Each worker is a "machine" of its own (its own HONE_HOME and project folder, whose four knobs are
keys of a config file); the benchmark sleeps (so that workers do not compete for the 2 cores)
and scores the file with awk. The PostgreSQL cluster is started here (initdb in a temporary
folder, as the `postgres` user, on a loopback port) and deleted after. Printed per count of
workers: the whole wall time (baseline on every worker included), the search phase (first search
trial started to last finished, from the database) and the best true score found."""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from benchmarks.tune.postgres import cluster

IDEAL = {"a": 7, "b": 3, "c": 12, "d": 5}


def machine(folder: Path, name: str, sleep: float, trials: int, baseline: int) -> Path:
    folder.mkdir(parents=True)
    (folder / "app.conf").write_text("a 1\nb 1\nc 1\nd 1\n")
    score = " ".join(f'if ($1 == "{k}") s -= ($2 - {v}) ^ 2;' for k, v in IDEAL.items())
    knobs = "".join(
        f"  {k}: {{type: int, range: [1, 16], config: {{file: app.conf, format: space, "
        f"key: {k}}}}}\n"
        for k in IDEAL
    )
    (folder / "hone.yaml").write_text(
        f"name: {name}\nknobs:\n"
        + knobs
        + textwrap.dedent(f"""\
            benchmark:
              command: >-
                sleep {sleep} && awk 'BEGIN {{s = 1000}} {{{score}}} END {{print "score", s}}'
                app.conf
            metrics:
              score: {{pattern: 'score (\\S+)', direction: maximize}}
            tuning: {{engine: auto, budget: {trials}, baseline: {baseline}, seed: 1}}
        """)
    )
    return folder


def study_times(url: str, name: str) -> dict[str, float]:
    """From the database: the study's span (first trial started to last search trial finished,
    baselines included: what separate machines would see), its search phase, the best true
    score, and the confirmation after the search (one worker's rounds, left out of the span)."""
    from hone.storage import StudyStore

    store = StudyStore(url)
    study = store.find(name)
    every = store.storage.get_all_trials(study.study_id, deepcopy=False)
    confirm = [t for t in every if t.user_attrs.get("phase") == "confirm"]
    trials = [t for t in every if t.user_attrs.get("phase") in ("baseline", "search")]
    search = [t for t in trials if t.user_attrs.get("phase") == "search"]
    end = max(t.datetime_complete for t in trials if t.datetime_complete)
    best = max(
        1000 - sum((t.user_attrs["config"][k] - v) ** 2 for k, v in IDEAL.items()) for t in search
    )
    return {
        "span": (end - min(t.datetime_start for t in trials)).total_seconds(),
        "search": (end - min(t.datetime_start for t in search)).total_seconds(),
        "trials": len(search),
        "best": best,
        "gap_ms": _median_gap(search),
        # one worker confirms the winner after the search, the same work for any count
        "confirm": (
            (max(t.datetime_complete for t in confirm) - end).total_seconds() if confirm else 0.0
        ),
    }


def _median_gap(search: list) -> float:
    """Median time from a worker's search trial ending to its next one starting, in ms: the
    proposal and the wait for the study's lock."""
    gaps = []
    by_worker: dict[str, list] = {}
    for trial in search:
        by_worker.setdefault(trial.user_attrs.get("worker", ""), []).append(trial)
    for trials in by_worker.values():
        trials.sort(key=lambda t: t.datetime_start)
        for done, nxt in itertools.pairwise(trials):
            if done.datetime_complete:
                gaps.append((nxt.datetime_start - done.datetime_complete).total_seconds())
    return 1000 * statistics.median(gaps) if gaps else 0.0


def run(url: str, root: Path, workers: int, args: argparse.Namespace) -> dict[str, float]:
    name = f"workers{workers}"
    folders = [
        machine(root / name / f"m{i}", name, args.sleep, args.trials, args.baseline)
        for i in range(workers)
    ]
    started = time.monotonic()
    procs = [
        subprocess.Popen(
            [
                *(sys.executable, "-m", "hone", "worker", str(folder), "--storage", url),
                *("--worker-id", f"m{i}"),
            ],
            env={**os.environ, "HONE_HOME": str(folder / "home")},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for i, folder in enumerate(folders)
    ]
    for proc in procs:
        _, err = proc.communicate()
        if proc.returncode:
            raise SystemExit(f"a worker failed: {err.decode()[-500:]}")
    return {"wall": time.monotonic() - started, **study_times(url, name)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--sleep", type=float, default=1.0)
    parser.add_argument("--baseline", type=int, default=3)
    args = parser.parse_args()
    results: dict[int, dict[str, float]] = {}
    with cluster() as server, tempfile.TemporaryDirectory() as tmp:
        url = server.url
        for workers in args.workers:
            results[workers] = run(url, Path(tmp), workers, args)
    one = results.get(1)
    print(
        f"{args.trials} search trials, benchmark sleeps {args.sleep:g} s, "
        f"{args.baseline} baseline runs per worker, load {os.getloadavg()[0]:.1f}"
    )
    print("| workers | study (first trial to last) | search phase | wall, processes started |")
    print("|---|---|---|---|")
    for workers, r in results.items():
        cells = [
            f"{r[key]:.1f} s" + (f" ({one[key] / r[key]:.2f}x)" if one else "")
            for key in ("span", "search", "wall")
        ]
        print(f"| {workers} | {' | '.join(cells)} |")
    print(
        "median gap between a worker's search trials (proposal + lock): "
        + ", ".join(f"{w} worker(s) {r['gap_ms']:.0f} ms" for w, r in results.items())
    )
    print(
        "confirmation after the search (one worker): "
        + ", ".join(f"{w} worker(s) {r['confirm']:.1f} s" for w, r in results.items())
    )
    print(
        "best true score found (1000 is the optimum): "
        + ", ".join(f"{w} worker(s) {r['best']:.0f}" for w, r in results.items())
    )


if __name__ == "__main__":
    main()
