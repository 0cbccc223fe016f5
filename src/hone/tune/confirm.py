"""Sequential confirmation: when to look at the interleaved rounds, and how strictly.

Looking again after every round and stopping at the first interval above zero would confirm a
placebo far more often than 1 time in 40. So the 2.5 % one-sided error of a 95 % interval is
split between a few looks (Bonferroni): early looks before the planned rounds get 0.25 % between
them (only a large gain stops there), the look at the planned rounds 1.25 %, and the looks of
the extension (twice, four times the planned rounds ..., and the last allowed round) 1 %
between them. Each look's interval is at its own, stricter level, and that is the level the
report prints. Stopping because nothing is ahead spends no error (docs/trust.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from hone.tune.stats import detectable_gain

#: One-sided error of a 95 % interval, and its parts.
TOTAL = 0.025
EARLY = 0.0025
PLANNED = 0.0125


@dataclass(frozen=True)
class Plan:
    """`planned` rounds, extended up to `most` while the leader is close."""

    planned: int
    most: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "most", max(self.most, self.planned))

    def extension_looks(self) -> list[int]:
        looks, n = [], self.planned * 2
        while n < self.most:
            looks.append(n)
            n *= 2
        return [*looks, self.most] if self.most > self.planned else []

    def level(self, round_: int) -> float | None:
        """The two-sided confidence level (%) of the look after `round_` rounds, or None when
        there is no look then."""
        early = list(range(2, self.planned))
        extension = self.extension_looks()
        planned = PLANNED if extension else TOTAL - (EARLY if early else 0.0)
        if round_ in early:
            alpha = EARLY / len(early)
        elif round_ == self.planned:
            alpha = planned
        elif round_ in extension:
            alpha = (TOTAL - EARLY - PLANNED) / len(extension)
        else:
            return None
        return 100.0 * (1 - 2 * alpha)


def detectable(cv: float, rounds: int, plan: Plan, relative: bool = True) -> float:
    """The gain that `rounds` rounds of this plan confirm 4 times in 5, at their look's level
    (`relative`: a gain in % of the baseline; else scores already in points)."""
    return detectable_gain(cv, rounds, plan.level(rounds) or 95.0, relative=relative)


def rounds_for(
    cv: float, target: float, fewest: int, most: int, relative: bool = True
) -> int | None:
    """The fewest planned rounds, from `fewest` up to `most` (the most rounds allowed), whose
    look confirms a `target` % gain, or None."""
    for rounds in range(fewest, most + 1):
        if detectable(cv, rounds, Plan(rounds, most), relative) <= target:
            return rounds
    return None


def rounds_needed(cv: float, target: float, limit: int = 1000, relative: bool = True) -> int | None:
    """The most rounds to allow (--max-repeats) for `target` % to be confirmable at all."""
    return next((n for n in range(2, limit + 1) if rounds_for(cv, target, n, n, relative)), None)


def _reach(rounds: int, gain: float | None, short: bool = False) -> str:
    """`3 confirmation rounds confirm gains from 2.1 %`; a single round confirms none (its
    detectable gain is infinite, stored as null once it passed through JSON)."""
    what = ("round" if short else "confirmation round") + ("" if rounds == 1 else "s")
    if gain is None or not math.isfinite(gain):
        verb = "confirms" if rounds == 1 else "confirm"
        return f"{rounds} {what} {verb} no gain (an interval needs 2 rounds)"
    return f"{rounds} {what} {'from' if short else 'confirm gains from'} {gain:.1f} %"


def noise_text(cv: float, runs: int) -> str:
    """`noise CV 4.8 %`; one baseline run has no spread to show: its CV of 0 is no noise
    measured, not a noiseless benchmark."""
    return f"noise CV {cv:.1f} %" if runs > 1 else f"noise unknown ({runs} baseline run)"


def quality_text(quality: dict[str, Any]) -> str:
    """The measurement-quality line of a run and of `hone show`."""
    if quality["runs"] < 2:
        return (
            f"measurement: {noise_text(quality['cv'], quality['runs'])}: no gain is known to be "
            "confirmable before the confirmation's own rounds"
        )
    text = (
        f"measurement: noise CV {quality['cv']:.1f} % over {quality['runs']} baseline runs; "
        f"{_reach(quality['rounds'], quality['detectable'])}"
    )
    if quality["max_rounds"] > quality["rounds"]:
        text += f", {_reach(quality['max_rounds'], quality['detectable_max'], short=True)}"
    if quality.get("min_detectable") is not None:
        text += f" (--min-detectable {quality['min_detectable']:g} %)"
    return text
