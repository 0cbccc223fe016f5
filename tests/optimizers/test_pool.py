"""auto over a finite pool of configurations (`SearchSpace.candidates`): it proposes members
only, never the same one twice unless it means to measure it again, and finds a pool's good
rows faster than random choice."""

from __future__ import annotations

import numpy as np

from hone.optimizers import make_optimizer
from hone.optimizers.encoding import Encoder
from hone.optimizers.pool import Pool
from hone.space import Categorical, IntRange, Ordinal, SearchSpace


def pool_space(rows: int, seed: int = 0) -> tuple[SearchSpace, dict[tuple, float]]:
    """A sampled table: `rows` random configurations of 5 knobs with a known response."""
    rng = np.random.default_rng(seed)
    domains = {
        "threads": IntRange(1, 64),
        "buffer": Ordinal([4, 8, 16, 32, 64, 128, 256, 512, 1024]),
        "mode": Categorical(["a", "b", "c", "d"]),
        "batch": IntRange(1, 100),
        "idle": IntRange(0, 10),
    }
    space = SearchSpace(domains)
    table = {}
    while len(table) < rows:
        config = space.sample(rng)
        table.setdefault(space.key(config), config)
    configs = list(table.values())

    def truth(c: dict) -> float:
        return (
            (c["threads"] - 40) ** 2 / 400
            + (np.log2(c["buffer"]) - 7) ** 2 / 4
            + {"a": 1.0, "b": 0.0, "c": 0.6, "d": 2.0}[c["mode"]]
            + (c["batch"] - 30) ** 2 / 900
        )

    return SearchSpace(domains, candidates=configs), {space.key(c): truth(c) for c in configs}


def test_auto_proposes_pool_members_and_finds_good_rows() -> None:
    space, truths = pool_space(3000)
    best = min(truths.values())
    found = {}
    for engine in ("auto", "random"):
        gaps = []
        for seed in range(3):
            optimizer = make_optimizer(engine, space, seed=seed, budget=40)
            seen = []
            for _ in range(40):
                config = optimizer.ask()
                key = space.key(config)
                if engine == "auto":
                    assert key in truths, config
                seen.append(key)
                optimizer.tell(config, truths.get(key, 10.0))
            if engine == "auto":  # each configuration once: the pool is noise-free here
                assert len(set(seen)) >= 38
            gaps.append(min(truths.get(k, 10.0) for k in seen) - best)
        found[engine] = float(np.median(gaps))
    assert found["auto"] < found["random"] / 2, found


def test_pool_offers_nearest_rows_and_leaves_measured_ones_out() -> None:
    space, _ = pool_space(5000, seed=1)
    pool = Pool(Encoder(space), space.candidates)
    assert len(pool) == 5000 and not pool.whole
    centre = pool.units[17]
    near = pool.nearest(centre, 10, set())
    assert near[0] == 17  # a row is nearest to itself
    distances = pool.distances(centre)
    assert np.all(np.diff(distances[near]) >= 0)
    assert distances[near].max() <= np.sort(distances)[9] + 1e-12
    tried = {pool.units[17].round(9).tobytes()}
    offered = pool.around(pool.units[[17, 3]], np.random.default_rng(0), tried)
    assert 256 <= len(offered) <= 256 + 64 + 1024
    assert not any(np.array_equal(row, pool.units[17]) for row in offered)
    assert all(pool.config(row) is not None for row in offered)
