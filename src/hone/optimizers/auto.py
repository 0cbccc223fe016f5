"""hone's default optimiser, made for expensive, noisy system benchmarks.

- It starts from the default configuration (the tuning loop measures it several times, which
  tells the noise) and five space-filling points (of a Latin hypercube of eight, or of a
  pool's rows spread the same way); the model takes over from there.
- A Gaussian process whose kernel adds one smooth curve per knob to a Matern term for the
  interactions (`additive_gp.py`): server knobs mostly act on their own, and a model made for
  that learns from a few dozen trials where a full Matern kernel in 16 or 30 knobs cannot.
  Numeric knobs are encoded by position, so order is kept; categories one-hot. Its white-noise
  term is the noise model.
- Failures are not imputed as fake values: a tree classifier learns where configurations fail,
  and the acquisition is multiplied by the probability of success.
- Candidates are every one-knob change of the incumbent (the sweeps that find most gains on
  servers), neighbours of the best configurations in a region that narrows as the study goes
  on (a trust region, as in TuRBO) and global samples; the best few are then improved one knob
  at a time under the acquisition, which finds moves of several knobs at once. They are ranked
  by the expected improvement beyond a margin (a tenth of the values' spread), so near-copies
  of the incumbent that promise a sliver do not crowd out moves that could matter.
- When the uncertainty about the incumbent is four times what a new configuration is expected
  to gain, it re-measures the incumbent instead: a noisy winner is worth confirming, but
  evaluations spent on new configurations teach the model more (the threshold was twice).
  Any of the most promising measured configurations (the incumbent too, past those repeats) is
  measured again when that is worth four times the best new one (its acquisition times the
  share of its uncertainty one reading resolves): on a grid of a few dozen configurations, what
  is left unmeasured late in a study is poor or failing, and a near-optimum with one unlucky
  reading is worth more. Once every configuration has been tried, one that has only failed
  is tried again now and then (a flaky optimum failing its one try was never tried again).
- A benchmark whose repeats read exactly the same is deterministic (a code size, a simulation,
  a table without noise): there a reading is the truth, so the margin goes, the best reading
  is deployed and no configuration is read more than five times while new ones remain, until
  a repeat differs.
- It recommends the measured configuration with the best posterior mean plus one standard
  deviation: never the luckiest reading, and a configuration measured once must be clearly
  better than the thrice-measured default to replace it. One that failed in more of its
  trials than it ran is not recommended while another ran as often as it failed (the model
  sees only successes: a flaky configuration's one good reading won).
- Suggestions stay cheap: the model is trained on a capped window (the best and the most recent
  points), its hyperparameters are refitted only every few trials, and its small matrices run
  on one BLAS thread (threads only contend on a busy machine).
- `ask_batch` proposes diverse configurations for several machines (constant liar: the
  median), given those still being measured elsewhere."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import wraps

import numpy as np
from threadpoolctl import ThreadpoolController

from hone.optimizers.additive_gp import AdditiveGP
from hone.optimizers.base import Observation, Optimizer, register
from hone.optimizers.designs import latin_hypercube
from hone.optimizers.encoding import (
    Encoder,
    coordinate_moves,
    first_feasible,
    fresh_candidates,
    neighbours,
    row_keys,
)
from hone.optimizers.pool import Pool
from hone.optimizers.success import SuccessModel
from hone.optimizers.surrogate import expected_improvement
from hone.space import Config, SearchSpace

WINDOW = 128  # points the model is trained on, at most
REFIT_EVERY = 8  # trials between hyperparameter fits
STARTS = 8  # space-filling points planned after the default; the first five are proposed
GLOBAL = 256  # global random candidates per suggestion
EXPLORE = 0.1  # proposals rank by gains beyond this many standard deviations of the values
CLIMBS, CLIMB_STEPS = 3, 4  # candidates improved knob by knob, and steps each
CLIMB_MOVES = 256  # one-knob moves looked at per step, at most
CAUTION = 1.0  # standard deviations a recommendation's mean is penalised by
MAX_REPEATS = 2  # measurements after which the incumbent is not confirmed again
REMEASURE = 4.0  # re-measure the incumbent when its spread exceeds this many expected gains
CHALLENGERS = 16  # measured configurations considered for measuring again
AGAIN = 4.0  # measure a configuration again when that is worth this many new ones
READINGS = 5  # readings of the incumbent, at most, while new configurations remain
SURE = 0.6  # candidates less likely than this to run are not proposed (unless all are)
SAMPLE_TRIES = 16  # random draws to get past configurations pending in a batch
_BLAS = ThreadpoolController()


def _one_blas_thread(method: Callable) -> Callable:
    @wraps(method)
    def wrapper(*args, **kwargs):
        with _BLAS.limit(limits=1, user_api="blas"):
            return method(*args, **kwargs)

    return wrapper


@dataclass
class Measured:
    """The distinct configurations measured so far, with the model's posterior mean and the
    spread of their true values."""

    units: np.ndarray
    configs: list[Config]
    mean: np.ndarray
    std: np.ndarray

    def best(self, caution: float = 0.0) -> tuple[Config, float, float]:
        """The best posterior mean, or with `caution`, the best mean plus that many standard
        deviations (a configuration measured once has to be clearly better to win)."""
        index = int(np.argmin(self.mean + caution * self.std))
        return self.configs[index], float(self.mean[index]), float(self.std[index])


@register
class Auto(Optimizer):
    name = "auto"
    #: A-Tune's reinforcement-learning engine; a client YAML naming it gets hone's best instead.
    aliases = ("ppo",)

    def __init__(self, space: SearchSpace, **options) -> None:
        super().__init__(space, **options)
        self.encoder = Encoder(space)
        # a finite pool of the only configurations that can be measured: proposals come from it
        self.pool = Pool(self.encoder, space.candidates) if space.candidates else None
        starts = self.random_starts or STARTS
        if self.pool:
            self.design = self.pool.spread(starts, self.rng)
        else:
            self.design = latin_hypercube(space, starts, self.rng)
        self.fitted_at = -REFIT_EVERY
        self.model = AdditiveGP(self.encoder)
        self.success = SuccessModel(self.encoder, self.seed)
        self.measured: Counter[tuple] = Counter()
        self.first_reading: dict[tuple, float] = {}
        # configurations whose repeats all gave their first reading; None once one did not
        self.agreed: set[tuple] | None = set()
        self.pending: set[tuple] = set()  # proposed in the batch being made: not proposed again
        self.lies = 0  # observations at the end of the history that are the batch's liars

    # -- proposals -------------------------------------------------------------------------

    @_one_blas_thread
    def ask(self) -> Config:
        first = self.first_config()
        if first is not None:
            return first
        done = [o for o in self.history if o.value is not None]
        # While the history is short: after the default's three measurements this proposes
        # five of the eight design points, after one measurement six (two points, as before,
        # left the model to lead from three distinct configurations: on tables it had never
        # seen its first ten evaluations were worse than random rows; docs/optimizers.md).
        if self.design and len(self.history) <= len(self.design) + 3:
            # (a design point being measured elsewhere, in a batch, is skipped)
            while self.design and self.space.key(self.design[0]) in self.pending:
                self.design.pop(0)
            if self.design:
                return self._unmeasured(self.design.pop(0))
        if len(done) < 3:
            return self._sample()
        self._fit(done)
        # the incumbent and the centres of the search are measured configurations, never the
        # pending ones whose value is a lie (the last `lies` of the history)
        measured = done[: len(done) - self.lies] if self.lies else done
        known = self._measured(measured)
        incumbent, incumbent_mean, incumbent_std = known.best()
        tried = set(row_keys(self.encoder.units([o.config for o in self.history])))
        pool = self._candidates(measured, incumbent, tried)
        success = self.success(self.history)
        # Where every candidate is more likely to fail than not (a grid that mostly fails),
        # only the likeliest go: with none at all, the configurations measured already were
        # measured again and again while the rest of the grid went unseen.
        pool_odds = success(pool)
        sure = min(SURE, float(pool_odds.max())) if len(pool) else SURE

        def score(
            units: np.ndarray,
            margin: float = 0.0 if self.exact else EXPLORE,
            odds: np.ndarray | None = None,
        ) -> np.ndarray:
            # Where failure is more likely than not, do not go at all; elsewhere weigh by it.
            # Only gains beyond the margin count: with noisy, flat predictions near the
            # incumbent, plain expected improvement prefers near-copies of it that promise a
            # sliver, and a study of 16 knobs spent its evaluations on them. Where readings
            # never vary the sliver is real, and the last per cent is found in such moves.
            mean, std = self._latent(units)
            odds = success(units) if odds is None else odds
            target = incumbent_mean - margin * self.model.std_y
            return expected_improvement(mean, std, target) * np.where(odds < sure, 0.0, odds**2)

        if not len(pool):  # every configuration measured: measure the most promising again
            again = self._challenger(known, pool, score) or dict(incumbent)
            return self._retry(again) or again
        gain = score(pool, odds=pool_odds)
        pool, gain = self._climb(pool, gain, score, tried)
        order = np.argsort(-gain)
        expected = float(score(pool[order[:1]], 0.0)[0])  # the whole expected gain
        key = self.space.key(incumbent)
        again = self.measured[key] < MAX_REPEATS and key not in self.pending
        if incumbent_std > REMEASURE * expected and again:
            return dict(incumbent)
        challenger = self._challenger(known, pool[order[:1]], score)
        if challenger:
            return challenger
        if self.pool:  # a free candidate ranked first runs as the pool row nearest to it
            return self._member(pool[order[0]], tried) or dict(incumbent)
        return first_feasible(self.encoder, pool, order) or dict(incumbent)

    def _unmeasured(self, config: Config) -> Config:
        """A design point, or a random configuration in its place where it was measured
        already: on a grid of a few values per knob the hypercube's points fall on one another
        and on the default, and a small grid that mostly fails had its first design point
        measured three times in a row."""
        for _ in range(SAMPLE_TRIES):
            if not self.measured[self.space.key(config)]:
                break
            config = self._sample()
        return config

    def _sample(self) -> Config:
        """A random configuration (a row of the pool, if the space has one), not one pending
        in a batch (a few draws at most)."""
        source = self.pool or self.space
        config = source.sample(self.rng)
        for _ in range(SAMPLE_TRIES):
            if self.space.key(config) not in self.pending:
                break
            config = source.sample(self.rng)
        return config

    def _challenger(self, known: Measured, fresh: np.ndarray, score) -> Config | None:
        """A measured configuration worth measuring again rather than the best new one, or
        None. Each is scored by its acquisition times the share of its uncertainty that one
        more reading resolves (a configuration measured many times learns little from
        another); a measured one must beat the best new one AGAIN times over. On a grid of a
        few dozen configurations the new ones left late in a study are the poor and the failing
        ones, and a once-measured near-optimum with an unlucky reading is worth more (on the
        memcached table the last 20 evaluations went to configurations that fail). Only the
        most promising few are looked at, which keeps this cheap after 1000 trials."""
        if len(known.configs) < 2 and len(fresh):
            # one configuration that runs, nothing to choose it from: another reading of it
            # tells nothing (its readings are all the model has for noise), a new one might
            return None
        # while new configurations remain, the incumbent read READINGS times is not read again:
        # its acquisition (a chance to beat itself) never reaches zero, and a grid that half
        # fails had its incumbent read 17 times in a row, the optimum unmeasured. Where readings
        # never vary, no configuration read READINGS times is: where the model gave every new
        # one no chance at all, a deterministic grid of 8 had two read 40 times, the optimum
        # unmeasured (a cap for every configuration on noisy tables cost more than it gained)
        order, top = np.argsort(known.mean - known.std), int(np.argmin(known.mean))
        if len(fresh):
            looked = order if self.exact else [top]
            read = [
                i for i in looked if self.measured[self.space.key(known.configs[i])] >= READINGS
            ]
            order = order[~np.isin(order, read)]
        hopeful = np.array(list(self._not_pending(known, order)))
        if not len(hopeful):
            return None
        both = np.vstack([known.units[hopeful], fresh])
        new_std = self._latent(fresh)[1] if len(fresh) else np.empty(0)
        std = np.concatenate([known.std[hopeful], new_std])  # the measured ones' are known
        noise = float(np.exp(self.model.theta[3])) * self.model.std_y**2
        resolved = score(both) * std**2 / (std**2 + noise)
        pick = int(np.argmax(resolved[: len(hopeful)]))
        if resolved[pick] > AGAIN * resolved[len(hopeful) :].max(initial=0.0):
            return dict(known.configs[hopeful[pick]])
        return None

    def _retry(self, again: Config) -> Config | None:
        """A configuration that has only failed, to try in place of `again` once that has
        been tried READINGS times for each of its tries: on a grid measured through, where
        every configuration fails now and then, the optimum that failed its one try was never
        tried again, and the default was read 40 times in a row instead. A configuration that
        always fails (a cliff) costs a try each time, ever more rarely."""
        worked = {self.space.key(o.config) for o in self.history if o.value is not None}
        failed: dict[tuple, Config] = {}
        for observation in self.history:
            key = self.space.key(observation.config)
            if observation.value is None and key not in worked and key not in self.pending:
                failed.setdefault(key, observation.config)
        if not failed:
            return None
        fewest = min(failed, key=self.measured.__getitem__)  # the first of them on a tie
        if self.measured[self.space.key(again)] < READINGS * self.measured[fewest]:
            return None
        return dict(failed[fewest])

    def _not_pending(self, known: Measured, order: np.ndarray) -> Iterator[int]:
        """The first CHALLENGERS of `order` that are not pending in a batch (keys are computed
        for those looked at only: for all of 1000 trials they cost 70 ms)."""
        found = 0
        for index in order:
            if found == CHALLENGERS:
                return
            if self.space.key(known.configs[index]) not in self.pending:
                found += 1
                yield int(index)

    def _climb(
        self, pool: np.ndarray, gain: np.ndarray, score, tried: set[bytes]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Improve the best few candidates one knob at a time under the acquisition, so that
        moves of several knobs at once (which random neighbours rarely hit in 30 knobs) are
        found too; returns the pool with the climbed rows added. With many knobs each step
        looks at a random subset of the one-knob moves, to stay cheap."""
        found, gains = [pool], [gain]
        for start in np.argsort(-gain)[:CLIMBS]:
            row, value = pool[start], gain[start]
            for _ in range(CLIMB_STEPS):
                moves = coordinate_moves(self.encoder, row)
                if len(moves) > CLIMB_MOVES:
                    moves = moves[self.rng.choice(len(moves), CLIMB_MOVES, replace=False)]
                moves = fresh_candidates(moves, tried)
                if not len(moves):
                    break
                scores = score(moves)
                best = int(np.argmax(scores))
                if scores[best] <= value * 1.0001:
                    break
                row, value = moves[best], float(scores[best])
                found.append(row[None, :])
                gains.append(np.array([value]))
        return np.vstack(found), np.concatenate(gains)

    def tell(self, config: Config, value: float | None) -> None:
        super().tell(config, value)
        key = self.space.key(config)
        self.measured[key] += 1
        if value is None or self.agreed is None:  # a failure is no reading to agree with
            return
        if key not in self.first_reading:
            self.first_reading[key] = value
        elif value == self.first_reading[key]:
            self.agreed.add(key)
        else:
            self.agreed = None

    @property
    def exact(self) -> bool:
        """Whether the benchmark looks deterministic (a code size, a simulation, a table
        without noise): a configuration measured again gave the very same reading, and no
        repeat ever differed. Then a reading is the truth: the margin on gains goes and the
        best reading is deployed. The first repeat that differs ends it for good (a measured
        table of a few rows per configuration can give the default's three readings from one
        row), and the rules that measure configurations again stay, so it can."""
        return bool(self.agreed)

    @_one_blas_thread
    def ask_batch(self, n: int, pending: Sequence[Config] = ()) -> list[Config]:
        """Constant liar: each pending configuration (being measured on another machine, or
        proposed earlier in this batch) is assumed to score the median value so far, and none
        is proposed twice (batches of four were one configuration when the lie was the best
        value, which is what auto measures again). The lie is the median, not the best: with
        four workers the best made the pending guesses the incumbent and the centre of the
        search, and studies of 40 evaluations ended 11 % from the optimum on the memcached table
        (1 % sequentially); `python -m benchmarks.tuners.workers` has the figures. The
        incumbent and the search's centres are never the pending configurations."""
        proposals: list[Config] = []
        saved = list(self.history)
        values = [o.value for o in saved if o.value is not None]
        liar = float(np.median(values)) if values else 0.0
        try:
            for config in pending:
                self._lie(config, liar)
            for _ in range(n):
                config = self.ask()
                proposals.append(config)
                self._lie(config, liar)
        finally:
            self.history = saved
            self.pending.clear()
            self.lies = 0
        return proposals

    def _lie(self, config: Config, value: float) -> None:
        self.pending.add(self.space.key(config))
        self.history.append(Observation(dict(config), value))
        self.lies += 1

    @_one_blas_thread
    def recommend(self) -> Config | None:
        done = [o for o in self.history if o.value is not None]
        if len(done) < 3 or self.exact:  # readings that never vary: the best one is the best
            return super().recommend()
        self._fit(done)
        return dict(self._measured(self.deployable()).best(CAUTION)[0])

    # -- the model -------------------------------------------------------------------------

    def _window(self, done: list[Observation]) -> list[Observation]:
        if len(done) <= WINDOW:
            return done
        best = sorted(done, key=lambda o: o.value)[: WINDOW // 2]
        chosen = {id(o) for o in best}  # by identity: comparing configs costs milliseconds
        recent = [o for o in done[-WINDOW:] if id(o) not in chosen][: WINDOW - len(best)]
        return best + recent

    def _fit(self, done: list[Observation]) -> None:
        """Condition the model on the window; refit its hyperparameters only now and then
        (every REFIT_EVERY trials early on, every tenth of the history later), which is what
        costs."""
        window = self._window(done)
        units = self.encoder.units([o.config for o in window])
        y = np.array([o.value for o in window], dtype=float)
        if len(self.history) - self.fitted_at >= max(REFIT_EVERY, len(self.history) // 10):
            self.model.fit(units, y)
            self.fitted_at = len(self.history)
        self.model.condition(units, y)

    def _latent(self, units: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and the spread of the true value (measurement noise taken out)."""
        return self.model.predict(units)

    def _measured(self, done: list[Observation]) -> Measured:
        """The model's belief about each configuration measured so far."""
        units = self.encoder.units([o.config for o in done])
        rows = list({key: index for index, key in enumerate(row_keys(units))}.values())
        mean, std = self._latent(units[rows])
        return Measured(units[rows], [done[row].config for row in rows], mean, std)

    def _candidates(
        self, done: list[Observation], incumbent: Config, tried: set[bytes]
    ) -> np.ndarray:
        """Unit rows to score: every one-knob change of the incumbent, neighbours of the best
        in a region that narrows as the budget is spent, and a few global samples."""
        progress = len(done) / max(self.budget or 50, 1)
        scale = float(np.clip(0.25 * (1 - progress), 0.04, 0.25))
        dims = self.encoder.dims
        best = sorted(done, key=lambda o: o.value)[:2]
        centres = self.encoder.units([incumbent] + [o.config for o in best])
        parts = [self.encoder.snap(self.rng.random((GLOBAL, dims)))]
        parts.append(coordinate_moves(self.encoder, centres[0]))
        parts.append(neighbours(self.encoder, centres[0], self.rng, 384, scale))
        for row in centres[1:]:
            parts.append(neighbours(self.encoder, row, self.rng, 96, scale))
        if self.pool:  # and the pool's own rows near the centres, and some anywhere
            parts.append(self.pool.around(centres, self.rng, tried))
        return fresh_candidates(np.vstack(parts), tried)

    def _member(self, row: np.ndarray, tried: set[bytes]) -> Config | None:
        """The pool's configuration at `row`, else the unmeasured pool row nearest to it."""
        found = self.pool.config(row)
        if found is None:
            near = self.pool.nearest(row, 1, tried)
            found = dict(self.pool.configs[near[0]]) if len(near) else None
        return found
