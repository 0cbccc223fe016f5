"""Workload-classification accuracy with whole files held out, hone against A-Tune's approach.

    python -m benchmarks.analyze.accuracy [--data atune|hone|both] [--limit 200] [--seeds 1]

Leave-one-file-out: each file whose class has at least one other file is held out in turn,
every method trains on all the other files and classifies the held-out file's windows
(45 s of samples each, at most --limit per file, evenly spread, so every file weighs the same).
A-Tune's approach is re-created from its published settings: the 52 raw metrics of each row,
standardised (fitted on the training rows, applied to both: the consistent version, not the
shipped one), an SVM with RBF kernel, C=100, balanced classes; and a random forest. A-Tune
classifies rows; a window's answer is its rows' majority vote, and row accuracy is shown too.

Two figures per method: all windows, and active windows only. Some of A-Tune's runs have long
quiet stretches (one of its speccpu files is idle throughout, a third of a mariadb run is idle):
a window in which nothing runs (CPU below 2 %, network below 10 kB/s, disk below 10 IOPS) shows no
workload, so the second figure leaves such windows out of every file not labelled idle.

--seeds N repeats every fold with the random seeds 0..N-1 (trees, A-Tune's row subsample) and
averages: a figure near a threshold should not hang on one seed."""

from __future__ import annotations

import argparse
import time
from collections import Counter, defaultdict

import numpy as np
from sklearn.ensemble import RandomForestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from hone.analyze.dataset import (
    ATUNE_INTERVAL,
    BUILTIN_DATA,
    HONE_INTERVAL,
    Run,
    atune_dataset,
    csv_files,
    load_runs,
)
from hone.analyze.features import window_rows, window_starts
from hone.analyze.model import fit, windows
from hone.collect import ATUNE_METRICS

ATUNE_ROWS_PER_FILE = 600  # A-Tune's models train on a row subsample (SVM cost grows as n^2)


def _atune_models(seed: int) -> dict[str, object]:
    return {
        "A-Tune SVM (RBF, C=100, balanced, scaled)": make_pipeline(
            StandardScaler(), SVC(kernel="rbf", C=100, class_weight="balanced", gamma="scale")
        ),
        "A-Tune random forest (scaled)": make_pipeline(
            StandardScaler(),
            RandomForestClassifier(
                n_estimators=100, class_weight="balanced", n_jobs=1, random_state=seed
            ),
        ),
    }


def _raw_rows(run: Run, limit: int, rng: np.random.Generator) -> np.ndarray:
    rows = np.nan_to_num(run.values, nan=-1.0)  # as A-Tune's files have it
    if len(rows) > limit:
        rows = rows[np.sort(rng.choice(len(rows), limit, replace=False))]
    return rows


def _window_votes(predicted: np.ndarray, run: Run, limit: int) -> list[str]:
    """Majority vote of the row predictions over each evaluation window."""
    size = window_rows(run.interval)
    starts = window_starts(len(predicted), run.interval, limit)
    return [Counter(predicted[s : s + size]).most_common(1)[0][0] for s in starts]


def active(run: Run, limit: int) -> np.ndarray:
    """Which evaluation windows show a workload (all of them in an idle run)."""
    size = window_rows(run.interval)
    starts = window_starts(len(run.values), run.interval, limit)
    if run.cls == "idle":
        return np.ones(len(starts), dtype=bool)
    at = {name: i for i, name in enumerate(ATUNE_METRICS)}
    values = np.nan_to_num(run.values)
    means = np.array([values[s : s + size].mean(axis=0) for s in starts])
    quiet = (
        (means[:, at["CPU.STAT.util"]] < 2)
        & (means[:, at["NET.STAT.rxkBs"]] + means[:, at["NET.STAT.txkBs"]] < 10)
        & (means[:, at["STORAGE.STAT.rs"]] + means[:, at["STORAGE.STAT.ws"]] < 10)
    )
    return ~quiet


def _score(scores: dict[str, list[float]], right: np.ndarray, busy: np.ndarray) -> None:
    scores["window"].append(float(np.mean(right)))
    scores["file"].append(float(np.mean(right) > 0.5))
    if busy.any():
        scores["active"].append(float(np.mean(right[busy])))


def evaluate(runs: list[Run], limit: int, seeds: int = 1) -> dict[str, dict[str, float]]:
    scores: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for seed in range(seeds):
        _folds(runs, limit, seed, scores)
    return {
        name: {k: float(np.mean(v)) for k, v in parts.items()} for name, parts in scores.items()
    }


def _folds(
    runs: list[Run], limit: int, seed: int, scores: dict[str, dict[str, list[float]]]
) -> None:
    """Every held-out fold with one seed; scores are appended per file."""
    per_class = Counter(run.cls for run in runs)
    held = [i for i, run in enumerate(runs) if per_class[run.cls] > 1]
    rng = np.random.default_rng(seed)
    hardware = not any(np.isnan(r.values[:, ATUNE_METRICS.index("PERF.STAT.IPC")]).all()
                       for r in runs)  # fmt: skip
    for i in held:
        test, train = runs[i], [r for j, r in enumerate(runs) if j != i]
        busy = active(test, limit)
        for name, with_counters in (("hone", False), ("hone + hardware counters", True)):
            if with_counters and not hardware:
                continue
            started = time.perf_counter()
            model = fit(train, seed=seed, hardware=with_counters)
            x = windows(test.values, test.interval, limit=limit, hardware=with_counters)
            predicted = np.array(model.classes)[model.probabilities(x).argmax(axis=1)]
            _score(scores[name], predicted == test.cls, busy)
            scores[name]["seconds"].append(time.perf_counter() - started)
        xs = np.vstack([_raw_rows(r, ATUNE_ROWS_PER_FILE, rng) for r in train])
        ys = np.concatenate([[r.cls] * min(len(r.values), ATUNE_ROWS_PER_FILE) for r in train])
        rows = np.nan_to_num(test.values, nan=-1.0)
        for name, estimator in _atune_models(seed).items():
            started = time.perf_counter()
            estimator.fit(xs, ys)  # type: ignore[attr-defined]
            row_pred = estimator.predict(rows)  # type: ignore[attr-defined]
            votes = _window_votes(row_pred, test, limit)
            scores[name]["row"].append(float(np.mean(row_pred == test.cls)))
            _score(scores[name], np.array(votes) == test.cls, busy)
            scores[name]["seconds"].append(time.perf_counter() - started)
        line = "  ".join(f"{n.split(' (')[0]} {s['window'][-1]:.2f}" for n, s in scores.items())
        line += f"  (active windows {busy.mean():.0%}, seed {seed})"
        print(f"{test.source[:58]:58s} {test.cls:18s} {line}", flush=True)


def load(which: str) -> list[Run]:
    runs: list[Run] = []
    if which in ("atune", "both"):
        folder = atune_dataset()
        if folder is None:
            raise SystemExit("A-Tune's dataset not found: set HONE_ATUNE_DATASET")
        runs += [r for p in csv_files([folder]) for r in load_runs(p, ATUNE_INTERVAL)]
    if which in ("hone", "both"):
        runs += [r for p in csv_files([BUILTIN_DATA]) for r in load_runs(p, HONE_INTERVAL)]
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=("atune", "hone", "both"), default="atune")
    parser.add_argument("--limit", type=int, default=200, help="evaluation windows per file")
    parser.add_argument("--seeds", type=int, default=1, help="repeat with seeds 0..N-1, average")
    args = parser.parse_args()
    runs = load(args.data)
    print(f"{len(runs)} files, classes {dict(Counter(r.cls for r in runs))}")
    results = evaluate(runs, args.limit, args.seeds)
    held = sum(1 for c in Counter(r.cls for r in runs).values() if c > 1)
    print(f"\nheld out in turn: the files of the {held} classes with two or more files")
    print("| method | all windows | active windows | files (most windows right) | rows "
          "| s per fold |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for name, result in results.items():
        row = f"{result['row']:.3f}" if "row" in result else "-"
        print(f"| {name} | {result['window']:.3f} | {result['active']:.3f} "
              f"| {result['file']:.3f} | {row} | {result['seconds']:.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()
