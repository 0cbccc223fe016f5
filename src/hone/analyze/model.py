"""The workload classifier: extremely randomised trees over window features.

Trees need no scaling, so the training and the query see the same numbers by construction
(A-Tune trains its SVM on unscaled data and queries it with scaled data). Every run weighs the
same and every class weighs the same, whatever their lengths: a 3-hour run must not drown a
5-minute one. The default model is trained at first use from hone's shipped runs plus A-Tune's
dataset when it is found (a few seconds), and cached under ~/.cache/hone."""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import sklearn
from sklearn.ensemble import ExtraTreesClassifier

from hone.analyze.dataset import CLASS_PROFILES, CLASSES, Run, builtin_runs, require_classes
from hone.analyze.features import FEATURES, HARDWARE_METRICS, row_names, windows
from hone.collect import ATUNE_METRICS
from hone.errors import HoneError
from hone.outfile import write_atomic

#: Bump when features or training change: cached models of older versions are not used.
VERSION = 5
WINDOWS_PER_RUN = 300


@dataclass
class Model:
    estimator: ExtraTreesClassifier
    classes: list[str]
    #: training medians of each feature: the neutral value for explaining one prediction
    medians: np.ndarray
    profiles: dict[str, str] = field(default_factory=dict)
    runs: dict[str, int] = field(default_factory=dict)  # class -> number of training runs
    hardware: bool = False  # uses hardware counters (needs a machine that has them)
    version: int = VERSION

    @property
    def row_names(self) -> tuple[str, ...]:
        return row_names(self.hardware)

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        return self.estimator.predict_proba(np.atleast_2d(x))

    def explain(self, x: np.ndarray, cls: str, top: int = 5) -> list[tuple[str, float]]:
        """Which row features carry this prediction: the drop in the class's probability when
        a feature (its median and sd together) is set to its training median, largest first."""
        at = self.classes.index(cls)
        names = self.row_names
        n = len(names)
        probes = np.repeat(np.atleast_2d(x), n, axis=0)
        for i in range(n):
            probes[i, i] = self.medians[i]
            probes[i, n + i] = self.medians[n + i]
        base = self.probabilities(x)[0, at]
        drops = base - self.probabilities(probes)[:, at]
        order = np.argsort(-drops)[:top]
        return [(names[i], float(drops[i])) for i in order if drops[i] > 0]


def training_set(runs: list[Run], limit: int = WINDOWS_PER_RUN, hardware: bool = False):
    """Windows of every run, their labels, and weights: each class 1, split evenly among the
    data sets (folders) that have it, then among a set's runs, then among a run's windows. Per
    data set, so that the set with more runs of a class (A-Tune's six nginx runs from big
    servers) does not drown the other (four nginx runs on this kind of machine)."""
    if hardware:  # only runs measured where the counters exist
        at = [ATUNE_METRICS.index(name) for name in HARDWARE_METRICS]
        runs = [run for run in runs if not np.isnan(run.values[:, at]).all()]
    parts = [(run, windows(run.values, run.interval, limit=limit, hardware=hardware))
             for run in runs]  # fmt: skip
    parts = [(run, w) for run, w in parts if len(w)]
    if not parts:
        raise HoneError("no run is long enough for one window of samples")
    per_set = Counter((run.cls, run.collection) for run, _ in parts)
    sets = Counter(cls for cls, _ in per_set)
    x = np.vstack([w for _, w in parts])
    y = np.concatenate([[run.cls] * len(w) for run, w in parts])
    weight = np.concatenate(
        [
            np.full(len(w), 1.0 / sets[run.cls] / per_set[run.cls, run.collection] / len(w))
            for run, w in parts
        ]
    )
    return x, y, weight * len(weight) / weight.sum()


def fit(
    runs: list[Run],
    profiles: dict[str, str] | None = None,
    seed: int = 0,
    *,
    hardware: bool = False,
) -> Model:
    x, y, weight = training_set(runs, hardware=hardware)
    classes = sorted(set(y))
    require_classes(classes)
    # 200 trees train in about a second here; gradient boosting took a minute for no gain.
    # Leaves of one window: held out by file, larger leaves (2, 5, 10) only lost accuracy.
    estimator = ExtraTreesClassifier(
        n_estimators=200, min_samples_leaf=1, max_features="sqrt", n_jobs=1, random_state=seed
    )
    estimator.fit(x, y, sample_weight=weight)
    mapping = {c: f"hone-{c}" for c in classes if c in CLASSES}
    mapping.update({c: p for c, p in CLASS_PROFILES.items() if c in classes})
    mapping.update(profiles or {})
    return Model(
        estimator,
        list(estimator.classes_),
        np.median(x, axis=0),
        mapping,
        dict(Counter(run.cls for run in runs)),
        hardware,
    )


def save(model: Model, path: Path) -> None:
    """Whole or not at all (a temporary file of its own, renamed): two processes caching the
    default model at once, or a crash mid-write, never leave half a model."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, pickle.dumps(model))


def load(path: Path) -> Model:
    """A model saved by `hone train` (a pickle: load only models you made yourself)."""
    try:
        model = pickle.loads(path.read_bytes())
    except FileNotFoundError:
        raise HoneError("no such model file", file=path) from None
    except Exception as exc:  # an unpickling failure can raise nearly anything
        raise HoneError(f"not a hone model ({type(exc).__name__}): retrain it", file=path) from None
    if not isinstance(model, Model) or model.version != VERSION:
        raise HoneError("made by another version of hone: retrain it", file=path)
    return model


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hone" / "analyze"


def default_model(hardware: bool = False) -> Model:
    """hone's model, trained on first use and cached (the key covers data, code and sklearn).
    `hardware=True`: the model with hardware counters, from the runs that have them (A-Tune's);
    a HoneError where no run has them (A-Tune's dataset not found)."""
    from hone.analyze.dataset import BUILTIN_DATA, atune_dataset

    key = hashlib.sha256(f"{VERSION} {sklearn.__version__} {FEATURES} {hardware}".encode())
    for folder in (BUILTIN_DATA, atune_dataset()):
        if folder is not None and folder.is_dir():
            for p in sorted(folder.iterdir()):
                key.update(f"{p.name} {p.stat().st_size}".encode())
    path = cache_dir() / f"model-{key.hexdigest()[:16]}.pkl"
    if path.exists():
        try:
            return load(path)
        except HoneError:
            pass
    model = fit(builtin_runs(), hardware=hardware)
    try:
        save(model, path)
    except (HoneError, OSError) as exc:  # a full or read-only disk: the cache is only a cache
        reason = (exc.strerror or str(exc)) if isinstance(exc, OSError) else exc.message
        print(f"hone: warning: the model is not cached in {path.parent} ({reason}): it is "
              "trained again next time", file=sys.stderr)  # fmt: skip
    return model
