"""Run tuners on tasks the way the tuning loop does, and score what each would deploy.

Every tuner gets the default configuration measured three times first (as `hone tune` measures
the baseline), then `budget` evaluations. After each evaluation the configuration the tuner
would deploy is scored by its truth, not by its luckiest noisy reading. Peers deploy what their
libraries report as best (the best single reading, as A-Tune and Optuna's best_trial do)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import optuna

from benchmarks.tuners.flash_peer import Flash
from benchmarks.tuners.process_peer import ProcessPeer
from benchmarks.tuners.skopt_peer import SkoptAtune
from benchmarks.tuners.smac_peer import SmacHpo
from benchmarks.tuners.tasks import Task
from benchmarks.tuners.torch_peers import OptunaGp
from hone.optimizers import Optimizer, make_optimizer
from hone.optimizers.tpe import OptunaOptimizer
from hone.space import Config


class CmaEs(OptunaOptimizer):
    """Optuna's CMA-ES (categorical knobs fall back to its independent sampler)."""

    name = "cmaes-peer"

    def sampler(self) -> optuna.samplers.BaseSampler:
        return optuna.samplers.CmaEsSampler(seed=self.seed, warn_independent_sampling=False)


class LuckiestReading:
    """A peer's deployment rule: the configuration with the best single measurement."""

    def __init__(self, inner: Optimizer) -> None:
        self.inner = inner

    def ask(self) -> Config:
        return self.inner.ask()

    def tell(self, config: Config, value: float | None) -> None:
        self.inner.tell(config, value)

    def recommend(self) -> Config | None:
        done = [o for o in self.inner.history if o.value is not None]
        return min(done, key=lambda o: o.value).config if done else None


TUNERS = {
    "auto": lambda space, seed, budget: make_optimizer("auto", space, seed=seed, budget=budget),
    "random": lambda space, seed, budget: LuckiestReading(
        make_optimizer("random", space, seed=seed, budget=budget)
    ),
    "optuna-tpe": lambda space, seed, budget: LuckiestReading(
        make_optimizer("tpe", space, seed=seed, budget=budget)
    ),
    "optuna-cmaes": lambda space, seed, budget: LuckiestReading(
        CmaEs(space, seed=seed, budget=budget)
    ),
    "gp-atune-bayes": lambda space, seed, budget: LuckiestReading(
        make_optimizer("bayes", space, seed=seed, budget=budget)
    ),
    "gbrt-atune": lambda space, seed, budget: LuckiestReading(
        make_optimizer("gbrt", space, seed=seed, budget=budget)
    ),
    "lhs-atune": lambda space, seed, budget: LuckiestReading(
        make_optimizer("lhs", space, seed=seed, budget=budget)
    ),
    "abtest-atune": lambda space, seed, budget: LuckiestReading(
        make_optimizer("abtest", space, seed=seed, budget=budget)
    ),
    "smac-hpo": lambda space, seed, budget: SmacHpo(space, seed, budget),
    "skopt-gp-atune": lambda space, seed, budget: SkoptAtune(space, seed, "GP"),
    "skopt-gbrt-atune": lambda space, seed, budget: SkoptAtune(space, seed, "GBRT"),
    "flash": lambda space, seed, budget: Flash(space, seed, budget),
    "openbox": lambda space, seed, budget: ProcessPeer("openbox", space, seed, budget),
    "hebo": lambda space, seed, budget: ProcessPeer("hebo", space, seed, budget),
    "optuna-gp": lambda space, seed, budget: LuckiestReading(
        OptunaGp(space, seed=seed, budget=budget)
    ),
}


@dataclass
class RunResult:
    task: str
    tuner: str
    seed: int
    gaps: list[float]  # relative gap of the deployed configuration's truth to the optimum
    regrets: list[float]  # normalised: 1 = as bad as the default (or worse), 0 = the optimum
    ask_seconds: list[float] = field(default_factory=list)
    # gap of the best configuration measured so far: what a perfect choice among the same
    # trials would deploy (benchmarks.optimizers.decisions)
    measured: list[float] = field(default_factory=list)
    #: why the run did not finish (out of memory); it is scored as never leaving the default
    error: str | None = None


def crashed(task: Task, tuner: str, seed: int, budget: int, error: str) -> RunResult:
    """A run that died: the system stays at its default configuration throughout, as a user
    whose tuner crashed is left."""
    default = task.space.defaults
    truth = task.truth(default)
    gap, regret = _gap(task, truth), _regret(task)(truth)
    return RunResult(
        task.name, tuner, seed, [gap] * budget, [regret] * budget, [], [gap] * budget, error
    )


def run(
    task: Task, tuner: str, seed: int, budget: int, baseline: bool = True, workers: int = 1
) -> RunResult:
    """One tuner's run; `baseline`: the default measured three times first (hone's protocol;
    PromiseTune's starts cold). `workers` > 1: as `hone worker` on that many machines, each
    proposal is made while the previous workers - 1 are still being measured (passed as
    pending) and trials end in the order they started."""
    rng = np.random.default_rng(10_000 + seed)  # the same measurement noise for every tuner
    optimizer = TUNERS[tuner](task.space, seed, budget)
    default = task.space.defaults
    best = float("inf")  # the best gap measured: the default's once one of its readings ran
    for _ in range(3 if baseline else 0):
        value = task.measure(default, rng)
        optimizer.tell(default, _minimised(task, value))
        if value is not None:
            best = _gap(task, task.truth(default))
    regret = _regret(task)
    gaps, regrets, asks, measured = [], [], [], []
    inflight: list[tuple[Config, float]] = []  # proposed, not yet measured, with ask time
    proposed = 0
    for _ in range(budget):
        while proposed < budget and len(inflight) < workers:
            started = time.perf_counter()
            pending = [c for c, _ in inflight]
            config = optimizer.ask_batch(1, pending=pending)[0] if pending else optimizer.ask()
            inflight.append((config, time.perf_counter() - started))
            proposed += 1
        config, asked = inflight.pop(0)
        value = _minimised(task, task.measure(config, rng))
        started = time.perf_counter()
        optimizer.tell(config, value)  # some peers (scikit-optimize) fit their model here
        asks.append(asked + time.perf_counter() - started)
        if value is not None:
            best = min(best, _gap(task, task.truth(config)))
        measured.append(best)
        # nothing has succeeded yet: the system stays at its default, as `hone tune` keeps it
        deployed = optimizer.recommend()
        truth = task.truth(deployed if deployed is not None else default)
        gaps.append(_gap(task, truth))
        regrets.append(regret(truth))
    return RunResult(task.name, tuner, seed, gaps, regrets, asks, measured)


def _gap(task: Task, truth: float | None) -> float:
    """A truth's gap to the optimum, relative to the task's scale (a failure region: infinite)."""
    if truth is None:
        return float("inf")
    loss = (truth - task.optimum()) if task.minimize else (task.optimum() - truth)
    return max(0.0, loss) / task.scale()


def _regret(task: Task) -> Callable[[float | None], float]:
    """A truth's normalised regret, (it - optimum) / (default - optimum) clipped to [0, 1];
    relative to the worst where the default is the optimum or fails, 0 where every
    configuration with a truth has the same one, and 1 for a failure region."""
    optimum = task.optimum()
    reference = task.truth(task.space.defaults)
    if reference is None or reference == optimum:
        reference = task.worst()
    span = abs(reference - optimum)

    def regret(truth: float | None) -> float:
        if truth is None:
            return 1.0
        loss = (truth - optimum) if task.minimize else (optimum - truth)
        return float(np.clip(loss / span, 0.0, 1.0)) if span else 0.0

    return regret


def _minimised(task: Task, value: float | None) -> float | None:
    if value is None:
        return None
    return value if task.minimize else -value
