"""Where configurations fail: the probability that a candidate runs at all, learned from a
study's failed trials, for `auto` to keep away from crashes and timeouts without imputing fake
values for them.

A tree classifier gives the shape of the failure region, averaged with nearness (a candidate
closer to a failure than to any success is probably a failure too). It is asked about every
candidate of every climbing step, a dozen times per suggestion, so its trees are read directly
(scikit-learn's own prediction costs 2 ms a call in dispatch alone), nearest points are found
by one matrix product, and the trees are refitted only when a new failure arrives or the
history has grown by a tenth: fitting 40 trees costs 30 ms whatever the history's size, which,
at every suggestion, was most of the time of a study with failures."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from hone.optimizers.base import Observation
from hone.optimizers.encoding import Encoder, squared_distances

TREES = 40

Probability = Callable[[np.ndarray], np.ndarray]


class SuccessModel:
    def __init__(self, encoder: Encoder, seed: int | None) -> None:
        self.encoder = encoder
        self.seed = seed
        self.trees: list = []
        self.fitted = (-1, 0)  # (trials, failures) the trees were fitted on

    def __call__(self, history: Sequence[Observation]) -> Probability:
        """The probability of success of unit rows, given the history so far."""
        labels = np.array([o.value is not None for o in history])
        if labels.all() or not labels.any():
            return lambda units: np.ones(len(units))
        seen = self.encoder.encode([o.config for o in history])
        self._refit(seen, labels)
        trees = self.trees

        def success(units: np.ndarray) -> np.ndarray:
            x = self.encoder.features(units)
            rows = np.ascontiguousarray(x, dtype=np.float32)  # what the trees are read with
            votes = np.zeros(len(x))
            for tree in trees:  # each tree's share of successes in the leaf x falls in
                counts = tree.tree_.predict(rows)
                votes += counts[:, 1] / counts.sum(axis=1)
            squared = squared_distances(x, seen)
            to_success = np.sqrt(squared[:, labels].min(axis=1))
            to_failure = np.sqrt(squared[:, ~labels].min(axis=1))
            nearness = to_failure / np.maximum(to_failure + to_success, 1e-12)
            return (votes / len(trees) + nearness) / 2

        return success

    def _refit(self, seen: np.ndarray, labels: np.ndarray) -> None:
        trials, failures = len(labels), int(np.count_nonzero(~labels))
        grown = abs(trials - self.fitted[0]) >= max(1, trials // 10)
        if failures == self.fitted[1] and not grown:
            return
        # imported at the first failure: a study without one never needs scikit-learn's
        # trees, which take 0.6 CPU seconds to import beside SciPy
        from sklearn import config_context
        from sklearn.tree import ExtraTreeClassifier
        from sklearn.utils import check_random_state

        # ExtraTreesClassifier's trees, built as it builds them (no bootstrap: every tree on
        # all rows as float32, each seeded by one draw from the forest's seed) without its
        # per-tree cloning, parameter validation and input checks, two thirds of a refit's
        # time: the same trees, node for node
        seeds = check_random_state(self.seed)
        x = np.ascontiguousarray(seen, dtype=np.float32)
        with config_context(skip_parameter_validation=True):
            self.trees = [
                ExtraTreeClassifier(
                    min_samples_leaf=2, random_state=seeds.randint(np.iinfo(np.int32).max)
                ).fit(x, labels, check_input=False)  # classes (False, True): 1 is success
                for _ in range(TREES)
            ]
        self.fitted = (trials, failures)
