"""Optuna's TPE sampler behind hone's interface. Ordinal knobs are handed to Optuna as an
integer index, so their order is kept."""

from __future__ import annotations

import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)

from hone.optimizers.base import Optimizer, register
from hone.space import Boolean, Categorical, Config, Domain, FloatRange, IntRange, SearchSpace


def _distribution(domain: Domain) -> BaseDistribution:
    if isinstance(domain, IntRange):
        step = 1 if domain.log else domain.step
        return IntDistribution(domain.low, domain.high, log=domain.log, step=step)
    if isinstance(domain, FloatRange):
        return FloatDistribution(domain.low, domain.high, log=domain.log, step=domain.step)
    if isinstance(domain, Categorical | Boolean):
        return CategoricalDistribution(list(domain.values() or []))
    return IntDistribution(0, len(domain.values() or [0]) - 1)  # ordinal: by rank


class OptunaOptimizer(Optimizer):
    """Any Optuna sampler through its ask/tell interface; subclasses choose the sampler."""

    def __init__(self, space: SearchSpace, **options) -> None:
        super().__init__(space, **options)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.study = optuna.create_study(direction="minimize", sampler=self.sampler())
        self.distributions = {name: _distribution(domain) for name, domain in space}
        self.pending: dict[tuple, list[optuna.trial.Trial]] = {}

    def sampler(self) -> optuna.samplers.BaseSampler:
        raise NotImplementedError

    def _to_params(self, config: Config) -> dict:
        params = {}
        for name, domain in self.space:
            value = config[name]
            if not isinstance(self.distributions[name], IntDistribution) or isinstance(
                domain, IntRange
            ):
                params[name] = value
            else:
                params[name] = (domain.values() or []).index(value)
        return params

    def _from_params(self, params: dict) -> Config:
        config = {}
        for name, domain in self.space:
            value = params[name]
            if isinstance(domain, IntRange | FloatRange | Categorical | Boolean):
                config[name] = value
            else:
                config[name] = (domain.values() or [])[int(value)]
        return config

    def ask(self) -> Config:
        first = self.first_config()
        if first is not None:
            return first
        for _ in range(50):
            trial = self.study.ask(self.distributions)
            config = self._from_params(trial.params)
            if self.space.feasible(config):
                self.pending.setdefault(self.space.key(config), []).append(trial)
                return config
            self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
        return self.space.sample(self.rng)

    def tell(self, config: Config, value: float | None) -> None:
        super().tell(config, value)
        waiting = self.pending.get(self.space.key(config))
        if waiting:
            trial = waiting.pop(0)
            if value is None:
                self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
            else:
                self.study.tell(trial, value)
            return
        state = (
            optuna.trial.TrialState.COMPLETE
            if value is not None
            else (optuna.trial.TrialState.FAIL)
        )
        self.study.add_trial(
            optuna.trial.create_trial(
                params=self._to_params(config),
                distributions=self.distributions,
                value=value,
                state=state,
            )
        )


@register
class TPE(OptunaOptimizer):
    name = "tpe"

    def sampler(self) -> optuna.samplers.BaseSampler:
        return optuna.samplers.TPESampler(seed=self.seed)
