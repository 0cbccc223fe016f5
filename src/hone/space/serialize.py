"""Domains as plain JSON-able dicts, so a stored study can rebuild its search space."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from hone.space.domains import Boolean, Categorical, Domain, FloatRange, IntRange, Ordinal

_TYPES: dict[str, type[Domain]] = {
    "int": IntRange,
    "float": FloatRange,
    "ordinal": Ordinal,
    "categorical": Categorical,
    "bool": Boolean,
}
_NAMES = {cls: name for name, cls in _TYPES.items()}


def domain_to_dict(domain: Domain) -> dict[str, Any]:
    data = asdict(domain)  # type: ignore[call-overload]
    data = {k: list(v) if isinstance(v, tuple) else v for k, v in data.items()}
    return {"type": _NAMES[type(domain)], **data}


def domain_from_dict(data: dict[str, Any]) -> Domain:
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k != "type"}
    return _TYPES[data["type"]](**fields)
