"""Option values Click would take as given: a float option accepts `nan` and `inf`, which
pass every `> 0` check hone makes and then fail deep inside (`round(nan)`) as a traceback."""

from __future__ import annotations

import math

import typer


def finite_float(text: str) -> float:
    """A float option's parser: a finite number, else Click's one-line usage error."""
    try:
        value = float(text)
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise typer.BadParameter(f"{text!r} is not a finite number")
    return value
