"""Parameter selection (A-Tune's `feature_filter_*`, hone's `tuning: {select: ...}`): after some
trials only the knobs that matter are searched, the others held at the best configuration's
values. A study makes its selection once and keeps it (`selection`), so that a resumed run and
every worker of a shared study search the same knobs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hone.optimizers.base import Optimizer, StartFirst, make_optimizer
from hone.project.model import FeatureFilter
from hone.space import Config, SearchSpace

#: the study attribute that holds the selection: {"knobs": [...], "held": {...}}
KEY = "selection"


def due(selector: FeatureFilter | None, budget: int, done: int, space: SearchSpace) -> bool:
    """Whether the selection is made now: once `done` search trials have finished (the
    project's number, else half the budget: A-Tune's feature_filter_iters is often left out,
    and ranking knobs before any trial keeps the first ones listed), if it leaves a knob out."""
    if selector is None or not 0 < selector.count < len(space):
        return False
    return done >= (selector.iterations or max(1, budget // 2))


def choose(space: SearchSpace, optimizer: Optimizer | StartFirst, count: int) -> dict[str, Any]:
    """The `count` knobs that matter most in the trials so far, and the best configuration's
    values for the others."""
    from hone.importance import shrink  # scikit-learn: only a study that selects needs it

    best = optimizer.recommend() or space.default() or {}
    sub, held = shrink(space, optimizer.history, count, hold=best)
    return {"knobs": list(sub.names), "held": held}


class Narrowed:
    """An optimiser over the kept knobs that takes and gives whole configurations: what it is
    told, and the configurations pending elsewhere, are cut to the kept knobs; what it proposes
    or recommends is completed with the held values."""

    def __init__(self, inner: Optimizer, held: Config) -> None:
        self.inner = inner
        self.held = dict(held)

    def _cut(self, config: Config) -> Config:
        return {n: config[n] for n in self.inner.space.names}

    def ask(self) -> Config:
        return {**self.held, **self.inner.ask()}

    def ask_batch(self, n: int, pending: Sequence[Config] = ()) -> list[Config]:
        proposed = self.inner.ask_batch(n, [self._cut(c) for c in pending])
        return [{**self.held, **config} for config in proposed]

    def tell(self, config: Config, value: float | None) -> None:
        self.inner.tell(self._cut(config), value)

    def recommend(self) -> Config | None:
        best = self.inner.recommend()
        return {**self.held, **best} if best is not None else None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # history, space, ...


def narrow(
    engine: str,
    optimizer: Optimizer | StartFirst,
    space: SearchSpace,
    selection: dict[str, Any],
    **options: Any,
) -> Narrowed:
    """A new optimiser of the same engine over the selection's knobs, told every trial so far."""
    held = {n: v for n, v in selection["held"].items() if n in space.domains}
    sub = space.restrict([n for n in space.names if n in selection["knobs"]], held)
    smaller = make_optimizer(engine, sub, **options)
    narrowed = Narrowed(smaller, held)
    for obs in optimizer.history:
        narrowed.tell(obs.config, obs.value)
    return narrowed


def kept_note(selection: dict[str, Any]) -> str:
    knobs = selection["knobs"]
    return f"kept the {len(knobs)} knobs that matter most: {', '.join(knobs)}"
