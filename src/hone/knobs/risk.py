"""Which knob values trade safety for speed: the `risk` of a knob, and the catalogue of
well-known risky settings (risky.yaml) that marks them when a project says nothing.

A risk is a kind (durability, availability, security) and either the whole knob (any value other
than the one the machine ran before tuning) or a list of risky values. The tuner still measures
risky values, but applies a winner that moves a knob onto one only with `--allow-risk`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from hone.knobs.base import equal_values

KINDS = ("durability", "availability", "security")
CATALOGUE = Path(__file__).with_name("risky.yaml")


@dataclass(frozen=True)
class Risk:
    """`whole`: kinds for which every change of the knob is risky; `values`: kind -> the risky
    values, as the knob's text is compared (case and surrounding space ignored, numbers by
    value). `why` says what the risk costs, in words for the report."""

    whole: tuple[str, ...] = ()
    values: dict[str, tuple[str, ...]] = field(default_factory=dict)
    why: str = ""

    def kinds_of(self, text: str, original: str | None) -> list[str]:
        """The risk kinds of setting the knob to `text` when it was `original` before tuning
        (keeping the value the machine already ran adds no risk)."""
        if original is not None and same_value(text, original):
            return []
        found = list(self.whole)
        for kind, risky in self.values.items():
            if kind not in found and any(same_value(text, v) for v in risky):
                found.append(kind)
        return found

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = dict(self.values)
        for kind in self.whole:
            data[kind] = "any change"
        return data

    def record(self) -> dict[str, Any]:
        """As a study keeps it (JSON), for `Risk.recorded` to read back."""
        return {"whole": list(self.whole), "values": self.values, "why": self.why}

    @classmethod
    def recorded(cls, data: dict[str, Any]) -> Risk:
        values = {kind: tuple(risky) for kind, risky in data.get("values", {}).items()}
        return cls(tuple(data.get("whole", ())), values, data.get("why", ""))

    def joined(self, other: Risk) -> Risk:
        """Risky where either is: every kind and value of both."""
        kinds = dict.fromkeys([*self.values, *other.values])
        return Risk(
            tuple(dict.fromkeys([*self.whole, *other.whole])),
            {
                k: tuple(dict.fromkeys([*self.values.get(k, ()), *other.values.get(k, ())]))
                for k in kinds
            },
            self.why or other.why,
        )


def same_value(a: str, b: str) -> bool:
    """Two values of a knob as a project file means them: case and surrounding space ignored,
    numbers by value (a risky value, a declared one)."""
    return equal_values(str(a).strip().lower(), str(b).strip().lower())


def parse_risk(raw: Any) -> Risk | None:
    """A project's `risk:` entry: `none`, a kind, a list of kinds (the whole knob), or a
    mapping kind -> risky values. ValueError with the reason when it is none of these."""
    if raw is None or (isinstance(raw, str) and raw.strip().lower() == "none"):
        return None
    if isinstance(raw, str):
        raw = [raw]
    if isinstance(raw, list):
        return Risk(whole=tuple(_kind(k) for k in raw))
    if isinstance(raw, dict):
        values: dict[str, tuple[str, ...]] = {}
        whole: list[str] = []
        for kind, risky in raw.items():
            kind = _kind(kind)
            if isinstance(risky, str) and risky.strip().lower() == "any":
                whole.append(kind)
                continue
            if not isinstance(risky, list) or not risky:
                raise ValueError(f"risk {kind}: give a list of risky values, or 'any'")
            values[kind] = tuple(_word(v) for v in risky)
        return Risk(tuple(whole), values)
    raise ValueError("risk must be none, a kind, a list of kinds or {kind: [values]}")


def _kind(value: Any) -> str:
    kind = str(value).strip().lower()
    if kind not in KINDS:
        raise ValueError(f"unknown risk {value!r} (one of {', '.join(KINDS)}, or none)")
    return kind


def _word(value: Any) -> str:
    if isinstance(value, bool):  # YAML reads a bare off/no as false
        return "off" if not value else "on"
    return str(value)


def _normal(name: str) -> str:
    """Names compare without leading dashes, case, `-`/`_` and a `PRAGMA ` prefix."""
    name = re.sub(r"^(--?|pragma\s+)", "", name.strip().lower())
    return name.replace("-", "_")


@cache
def _catalogue() -> dict[str, Risk]:
    entries = yaml.safe_load(CATALOGUE.read_text())["settings"]
    table: dict[str, Risk] = {}
    for entry in entries:
        risk = parse_risk(entry["risk"])
        assert risk is not None, entry
        risk = Risk(risk.whole, _with_off_words(risk.values), entry["why"])
        for name in entry["names"]:
            table[_normal(name)] = risk
    return table


def _with_off_words(values: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """`off` also covers `false` and `0` where a setting takes booleans (sqlite, mysql)."""
    words = {"off": ("false", "0"), "no": ("false",)}
    return {
        k: tuple(dict.fromkeys([*v, *(w for x in v for w in words.get(x, ()))]))
        for k, v in values.items()
    }


def catalogued(names: list[str]) -> Risk | None:
    """The catalogue's risk for a knob known by any of these names (its own name, its sysctl
    key, config key, flag, kernel parameter or variable), or None."""
    table = _catalogue()
    for name in names:
        if _normal(name) in table:
            return table[_normal(name)]
    return None


def identities(name: str, spec: dict[str, Any]) -> list[str]:
    """The names a knob is known by: its own and what its actuator sets."""
    found = [name]
    for key in ("key", "flag", "variable", "name"):
        value = spec.get(key)
        if isinstance(value, str) and value:
            found.append(value)
    return found
