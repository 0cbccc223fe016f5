"""Risky winners: which changes of a configuration trade safety for speed, and the choice
between the best confirmed configuration and the best safe one (docs/trust.md)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from hone.output import config_text
from hone.space import Config
from hone.tune.stats import Gain, gain_interval, gain_words

if TYPE_CHECKING:  # the views import this module to print a study, which needs no project
    from hone.project.model import Project


@dataclass(frozen=True)
class RiskyChange:
    """One knob moved onto a risky value, with the kinds of risk and what they cost."""

    knob: str
    value: str
    kinds: tuple[str, ...]
    why: str

    def __str__(self) -> str:
        why = f": {self.why}" if self.why else ""
        return f"{self.short()}{why}"

    def short(self) -> str:
        return f"{self.knob}={self.value} ({', '.join(self.kinds)} risk)"


def risky_changes(project: Project, config: Config, baseline: Config) -> list[RiskyChange]:
    """The changes from the configuration the machine ran before tuning onto risky values."""
    found = []
    for knob in project.knobs:
        if knob.risk is None or knob.name not in config:
            continue
        text = knob.text(config[knob.name])
        original = knob.text(baseline[knob.name]) if knob.name in baseline else None
        kinds = knob.risk.kinds_of(text, original)
        if kinds:
            found.append(RiskyChange(knob.name, text, tuple(kinds), knob.risk.why))
    return found


@dataclass
class Choice:
    """What confirmation leaves to apply: `best` (the configuration to decide on) and, when the
    best confirmed configuration was risky, both sides for the report."""

    best: Config | None
    gain: Gain | None
    risks: list[RiskyChange]
    #: The best confirmed configuration when it is risky and was set aside (no --allow-risk),
    #: or the best safe one when --allow-risk let a risky winner through.
    other: Config | None = None
    other_gain: Gain | None = None
    allowed: bool = False

    def record(self) -> dict[str, Any] | None:
        """The study's `result.risk`: both gains, so the report can set them side by side."""
        if not self.risks:
            return None
        risky, risky_gain = (
            (self.best, self.gain) if self.allowed else (self.other, self.other_gain)
        )
        safe, safe_gain = (self.other, self.other_gain) if self.allowed else (self.best, self.gain)
        return {
            "allowed": self.allowed,
            "risks": [str(r) for r in self.risks],
            # the same, as data: which value of which knob (the study list matches trials to it)
            "changes": [
                {"knob": r.knob, "value": r.value, "kinds": list(r.kinds)} for r in self.risks
            ],
            "risky": {"config": risky, "gain": gain_dict(risky_gain)},
            "safe": {"config": safe, "gain": gain_dict(safe_gain)} if safe else None,
        }


def choose(
    project: Project, baseline: Config, confirmed: list[tuple[Config, Gain]], allow: bool
) -> Choice:
    """The best confirmed configuration, unless it is risky and risk is not allowed: then the
    best safe one, keeping the risky winner for the report."""
    ranked = sorted((c for c in confirmed if c[1].rounds), key=lambda c: -c[1].mean)
    if not ranked:
        return Choice(None, None, [])
    top, top_gain = ranked[0]
    risks = risky_changes(project, top, baseline)
    if not risks:
        return Choice(top, top_gain, [])
    safe = next(((c, g) for c, g in ranked if not risky_changes(project, c, baseline)), None)
    safe_config, safe_gain = safe if safe else (None, None)
    if allow:
        return Choice(top, top_gain, risks, safe_config, safe_gain, allowed=True)
    return Choice(safe_config, safe_gain, risks, top, top_gain)


def carry(later: Choice, earlier: Choice) -> Choice:
    """A choice among the configurations confirmation went on with, keeping the other side of
    the risk decision from the earlier look (the risky winner set aside, or the safe one)."""
    if not earlier.risks or later.other is not None:
        return later
    return replace(
        later,
        risks=earlier.risks,
        other=earlier.other,
        other_gain=earlier.other_gain,
        allowed=earlier.allowed,
    )


def gain_dict(gain: Gain | None) -> dict[str, Any] | None:
    if gain is None:
        return None
    return {
        "mean": gain.mean,
        "low": gain.low,
        "high": gain.high,
        "rounds": gain.rounds,
        "level": gain.level,
    }


def gain_text(gain: dict[str, Any]) -> str:
    """A stored gain as the run printed it: mean and interval (level, rounds)."""
    low, high = gain_interval(gain)
    return gain_words(gain["mean"], low, high, gain.get("level", 95.0), gain.get("rounds"))


def risk_lines(record: dict[str, Any] | None) -> list[str]:
    """The risk part of a finished study in words: both configurations and both gains."""
    if not record:
        return []
    lines = ["risky values: " + "; ".join(record["risks"])]
    for side in ("risky", "safe"):
        entry = record.get(side)
        if not entry:
            lines.append(f"{side} winner: none confirmed")
            continue
        config = config_text(entry["config"] or {})
        gain = entry.get("gain")
        figure = gain_text(gain) if gain else "-"
        note = ""
        if side == "risky":
            note = " (--allow-risk)" if record["allowed"] else " (held back: needs --allow-risk)"
        lines.append(f"{side} winner{note}: {config}: {figure}")
    return lines
