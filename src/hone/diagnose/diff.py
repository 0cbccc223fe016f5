"""What moved between two profiles: shares before and after, by function or by module.

    changes = diff(before, after)                   # by function, total (inclusive) share
    changes = diff(before, after, by="module", measure="self")
    diff_summary(before, after)  # "rpc_wait +30 points (10 % -> 40 %), parse -12.5 points (...)"

Shares, not sample counts, are compared, so runs of different lengths compare fairly. Functions
are matched by name and module file name (not the full path), so two builds in different
folders still match. The differential flame graph is `flamegraph.diff_flamegraph_svg`.

The summary names each move once: a caller whose change is the same (within a fifth) as that
of a callee already named is left out, and the other way round, so a 30-point move in
`handle -> wait_timeout -> futex` appears as one entry, the outermost one that moved as much.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from hone.diagnose.profile import Profile
from hone.diagnose.tables import Order, Row, function_table, module_name, module_table, percent

By = Literal["function", "module"]


@dataclass(frozen=True)
class Change:
    """A function or module's share (0..1) of all samples before and after."""

    name: str
    module: str
    before: float
    after: float

    @property
    def delta(self) -> float:
        """The change in share (0.3 = 30 percentage points)."""
        return self.after - self.before


def diff(
    before: Profile, after: Profile, by: By = "function", measure: Order = "total"
) -> list[Change]:
    """Every function (or module) of either profile, largest move first."""
    old = _shares(before, by, measure)
    new = _shares(after, by, measure)
    changes = [
        Change(name, module, old.get((name, module), 0.0), new.get((name, module), 0.0))
        for name, module in old.keys() | new.keys()
    ]
    changes.sort(key=lambda c: (-abs(c.delta), c.name))
    return changes


def _shares(profile: Profile, by: By, measure: Order) -> dict[tuple[str, str], float]:
    rows: list[Row] = function_table(profile) if by == "function" else module_table(profile)
    shares: dict[tuple[str, str], float] = {}
    for row in rows:
        key = (row.name, module_name(row.module) if by == "function" else "")
        value = row.total_share if measure == "total" else row.self_share
        shares[key] = shares.get(key, 0.0) + value
    return shares


def moves(changes: list[Change], limit: int = 25) -> list[dict[str, Any]]:
    """The largest moves (0.1 point or more), largest first, as the API and --json give them."""
    return [
        {"name": c.name, "module": c.module, "before": c.before, "after": c.after}
        for c in changes[:limit]
        if abs(c.delta) >= 1e-3
    ]


def points(delta: float) -> str:
    """0.3 -> '+30 points', -0.125 -> '-12.5 points'."""
    text = f"{100 * delta:+.1f}".rstrip("0").rstrip(".")
    return f"{text} points"


def diff_summary(before: Profile, after: Profile, limit: int = 5, floor: float = 0.01) -> str:
    """One line naming the functions whose total share moved most (see the module docstring)."""
    named = notable(before, after, limit, floor)
    if not named:
        return "no function's share moved by 1 point or more"
    return ", ".join(
        f"{c.name} {points(c.delta)} ({percent(c.before)} -> {percent(c.after)})" for c in named
    )


def notable(before: Profile, after: Profile, limit: int = 5, floor: float = 0.01) -> list[Change]:
    """The functions whose total share moved most, each move named once (module docstring)."""
    changes = [c for c in diff(before, after)[: limit * 8] if abs(c.delta) >= floor]
    callers = _callers({(c.name, c.module) for c in changes}, before, after)
    # Equal moves (to half a point): the outermost first, so it is the one named.
    changes.sort(
        key=lambda c: (-round(abs(c.delta) * 200), len(callers[(c.name, c.module)]), c.name)
    )
    named: list[Change] = []
    for change in changes:
        key = (change.name, change.module)
        if any(_explains(change, other, key, callers) for other in named):
            continue
        named.append(change)
        if len(named) == limit:
            break
    return named


def _explains(change: Change, other: Change, key, callers) -> bool:
    """True when `other` (already named) is a caller or callee of `change` that moved about as
    much in the same direction."""
    related = (other.name, other.module) in callers.get(key, ()) or key in callers.get(
        (other.name, other.module), ()
    )
    return (
        related
        and change.delta * other.delta > 0
        and abs(change.delta - other.delta) <= (0.2 * max(abs(change.delta), abs(other.delta)))
    )


def _callers(wanted: set[tuple[str, str]], *profiles: Profile) -> dict[tuple[str, str], set]:
    """For each wanted function, the wanted functions seen above it on some stack."""
    callers: dict[tuple[str, str], set] = {key: set() for key in wanted}
    for profile in profiles:
        for _, frames in profile.stacks:
            seen: list[tuple[str, str]] = []
            for frame in frames:
                key = (frame.function, module_name(frame.module))
                if key in wanted:
                    callers[key].update(k for k in seen if k != key)
                    seen.append(key)
    return callers


def format_diff(changes: list[Change], limit: int = 20, title: str = "function") -> str:
    """Changes as a text table: before %, after %, change in points."""
    lines = [f"{'before %':>8} {'after %':>8} {'change':>8}  {title}"]
    for c in changes[:limit]:
        where = f"  ({c.module})" if c.module else ""
        lines.append(
            f"{100 * c.before:8.1f} {100 * c.after:8.1f} {100 * c.delta:+8.1f}  {c.name}{where}"
        )
    return "\n".join(lines)
