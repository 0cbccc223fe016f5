"""SMAC3's hyperparameter-optimisation facade (random forest, log-EI, intensification over
repeated seeds because the task is noisy) through its ask/tell interface. It deploys its
incumbent, as SMAC would; failed trials are told as the worst value seen (an infinite
crash cost breaks its random forest).

Costs are told divided by the size of the first nonzero reading (the default's, measured before
the search): a positive constant, so the order of every comparison is kept. Its log-scaled encoder
keeps the lowest cost off log(0) by an absolute 1e-10, which a float in the millions cannot hold
(one step of a float at 2**20 is 2.3e-10): told readings of millions of ops/s with the lowest
cost tied (a noise-free reading repeated), its forest refuses an infinite target. Relative to
the default every task is in the units of SMAC's own examples (about 1, as an error rate)."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

from hone.optimizers import Observation
from hone.space import Boolean, Categorical, Config, FloatRange, IntRange, SearchSpace


class SmacHpo:
    def __init__(self, space: SearchSpace, seed: int, budget: int) -> None:
        from ConfigSpace import ConfigurationSpace
        from ConfigSpace import hyperparameters as hp
        from smac import HyperparameterOptimizationFacade, Scenario

        logging.getLogger("smac").setLevel(logging.ERROR)
        self.space = space
        self.labels: dict[str, dict[str, object]] = {}
        config_space = ConfigurationSpace(seed=seed)
        defaults = space.defaults
        for name, domain in space:
            default = defaults.get(name)
            if isinstance(domain, IntRange) and domain.step == 1:
                param = hp.UniformIntegerHyperparameter(
                    name, domain.low, domain.high, log=domain.log, default_value=default
                )
            elif isinstance(domain, FloatRange) and not domain.step:
                param = hp.UniformFloatHyperparameter(
                    name, domain.low, domain.high, log=domain.log, default_value=default
                )
            else:
                values = domain.values() or []
                self.labels[name] = {str(v): v for v in values}
                labels = list(self.labels[name])
                kind = (
                    hp.CategoricalHyperparameter
                    if isinstance(domain, Categorical | Boolean)
                    else hp.OrdinalHyperparameter
                )
                param = kind(name, labels, default_value=str(default))
            config_space.add(param)
        self._tmp = tempfile.TemporaryDirectory()
        scenario = Scenario(
            config_space,
            deterministic=False,
            n_trials=budget + 3,
            seed=seed,
            output_directory=Path(self._tmp.name),
        )
        self.smac = HyperparameterOptimizationFacade(
            scenario, lambda config, seed=0: 0.0, overwrite=True, logging_level=40
        )
        self._pending: dict[tuple, list] = {}
        self.history: list[Observation] = []
        self._unit: float | None = None  # the first nonzero reading's size: costs' unit

    def _decode(self, configuration) -> Config:
        config = {}
        for name, _domain in self.space:
            value = configuration[name]
            config[name] = self.labels[name][value] if name in self.labels else value
        return config

    def _encode(self, config: Config):
        from ConfigSpace import Configuration

        values = {n: (str(v) if n in self.labels else v) for n, v in config.items()}
        return Configuration(self.smac.scenario.configspace, values=values)

    def ask(self) -> Config:
        from smac.main.exceptions import ConfigurationSpaceExhaustedException

        try:
            info = self.smac.ask()
        # A small grid, all of it seen: SMAC raises once, then its generator is finished
        # (StopIteration, which must not escape: a pool's consumer would take it as the end).
        except (ConfigurationSpaceExhaustedException, StopIteration):
            incumbent = self.recommend()  # nothing new left: measure the incumbent again
            return incumbent if incumbent is not None else self.space.defaults
        config = self._decode(info.config)
        self._pending.setdefault(self.space.key(config), []).append(info)
        return config

    def tell(self, config: Config, value: float | None) -> None:
        from smac.runhistory.dataclasses import TrialInfo, TrialValue

        self.history.append(Observation(config, value))
        pending = self._pending.get(self.space.key(config))
        info = (
            pending.pop(0) if pending else TrialInfo(self._encode(config), seed=len(self.history))
        )
        if value is None:  # an infinite crash cost breaks SMAC's forest: the worst seen instead
            seen = [o.value for o in self.history if o.value is not None]
            value = max(seen) if seen else 0.0
        if self._unit is None and value:
            self._unit = abs(value)
        self.smac.tell(info, TrialValue(cost=float(value) / (self._unit or 1.0)))

    def recommend(self) -> Config | None:
        incumbent = self.smac.intensifier.get_incumbent()
        return self._decode(incumbent) if incumbent is not None else None
