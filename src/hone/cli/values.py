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


#: The longest interval between two samples: a day. Python's sleep stops at 2**63 ns (292
#: years), and `-i 1e10` ended in an OverflowError traceback after the first reading.
MAX_INTERVAL = 86400.0


def check_interval(interval: float) -> None:
    """`--interval` of `hone collect` and `hone analyze`: above 0, at most a day."""
    from hone.errors import HoneError

    if not 0 < interval <= MAX_INTERVAL:
        raise HoneError(
            f"--interval must be above 0 and at most {MAX_INTERVAL:g} seconds (a day), not "
            f"{interval:g}"
        )
