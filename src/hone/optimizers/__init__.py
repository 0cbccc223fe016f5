"""Optimisers: propose configurations, learn from measured results.

Every optimiser is one module with one `Optimizer` subclass registered under its names (A-Tune's
engine names among them). Adding an optimiser means adding one file here and its names to
`base.ENGINES`, which imports a module only when its engine is used."""

from hone.optimizers.base import (
    Observation,
    Optimizer,
    make_optimizer,
    optimizer_names,
    register,
    start_first,
)

__all__ = [
    "Observation",
    "Optimizer",
    "make_optimizer",
    "optimizer_names",
    "register",
    "start_first",
]
