"""auto's model: the additive + Matern GP learns a knob-by-knob response from few noisy trials,
its warp keeps the order of heavy-tailed values, one-knob moves cover each knob's values,
candidates are de-duplicated against each other and the measured rows, and categories are
one-hot in their knob's place."""

from __future__ import annotations

import numpy as np

from hone.optimizers.additive_gp import AdditiveGP
from hone.optimizers.encoding import Encoder, coordinate_moves, fresh_candidates, row_keys
from hone.space import Boolean, Categorical, FloatRange, IntRange, Ordinal, SearchSpace


def space(knobs: int) -> SearchSpace:
    kinds = [
        lambda: IntRange(1, 32),
        lambda: Ordinal((4, 8, 16, 32, 64, 128)),
        lambda: Categorical(("a", "b", "c")),
        lambda: Boolean(),
        lambda: FloatRange(0.01, 100.0, log=True),
    ]
    return SearchSpace({f"k{i}": kinds[i % 5]() for i in range(knobs)})


def bells(units: np.ndarray) -> np.ndarray:
    """One bell per knob at its own position: separable, like most server knobs."""
    targets = np.linspace(0.2, 0.8, units.shape[1])
    return np.exp(-((units - targets) ** 2) / 0.05).sum(axis=1)


def test_learns_an_additive_response_in_16_knobs_from_40_noisy_trials() -> None:
    s = space(16)
    encoder = Encoder(s)
    rng = np.random.default_rng(0)
    train = encoder.units([s.sample(rng) for _ in range(40)])
    test = encoder.units([s.sample(rng) for _ in range(300)])
    y = -bells(train) * (1 + 0.03 * rng.normal(size=len(train)))
    model = AdditiveGP(encoder)
    model.fit(train, y)
    model.condition(train, y)
    mean, std = model.predict(test)
    assert np.corrcoef(mean, -bells(test))[0, 1] > 0.8
    assert np.all(std > 0)
    # the spread is smaller at measured points than far from them
    assert model.predict(train)[1].mean() < std.mean()


def test_warp_keeps_order_of_heavy_tailed_values() -> None:
    s = space(5)
    encoder = Encoder(s)
    rng = np.random.default_rng(1)
    units = encoder.units([s.sample(rng) for _ in range(30)])
    y = np.exp(5 * bells(units))  # one configuration far worse than the rest
    model = AdditiveGP(encoder)
    model.fit(units, y)
    warped = model.warp(y)
    assert model.power < 1.0  # compressed
    assert np.array_equal(np.argsort(warped), np.argsort(y))


def test_coordinate_moves_change_one_knob_over_its_values() -> None:
    s = space(5)
    encoder = Encoder(s)
    centre = encoder.units([s.sample(np.random.default_rng(2))])[0]
    moves = coordinate_moves(encoder, centre, levels=9)
    changed = (np.abs(moves - centre) > 1e-12).sum(axis=1)
    assert changed.max() == 1
    # int 1..32 thinned to 9 levels, 6 ordinal values, 3 categories, 2 booleans, 9 float levels
    assert len(moves) == 9 + 6 + 3 + 2 + 9
    assert set(np.round(moves[9:15, 1], 9)) == set(np.round(encoder.axes[1].positions, 9))


def test_fresh_candidates_drop_repeats_and_measured_rows_in_order() -> None:
    s = space(4)
    encoder = Encoder(s)
    rows = encoder.units([s.sample(np.random.default_rng(seed)) for seed in range(5)])
    # -0.0 and a 1e-12 wobble are the same position as 0.0 and the measured row
    nudged = rows[1] + 1e-12
    negative = rows[3].copy()
    negative[0] = -0.0
    rows[3, 0] = 0.0
    pool = np.vstack([rows[2], rows[0], rows[2], nudged, rows[4], rows[3], negative])
    fresh = fresh_candidates(pool, set(row_keys(rows[:2])))
    assert np.array_equal(fresh, np.vstack([rows[2], rows[4], rows[3]]))
    assert fresh_candidates(pool[:0], set(row_keys(rows))).shape == (0, 4)


def test_features_put_each_category_one_hot_in_its_knobs_place() -> None:
    s = space(8)  # categories of three choices at knobs 2 and 7, between ordered knobs
    encoder = Encoder(s)
    configs = [s.sample(np.random.default_rng(seed)) for seed in range(20)]
    x = encoder.encode(configs)
    assert x.shape == (20, encoder.width) and encoder.width == 6 + 2 * 3
    assert x.flags["C_CONTIGUOUS"]  # row-major like every other input: BLAS sums the same way
    units = encoder.units(configs)
    for column, (name, choice) in enumerate(encoder.columns):
        knob = s.names.index(name)
        if choice is None:
            assert np.array_equal(x[:, column], units[:, knob])
        else:
            chosen = np.array([config[name] == choice for config in configs], dtype=float)
            assert np.array_equal(x[:, column], chosen)
