"""Where the CPU time goes: tables and call trees of a `Profile`, and a one-line summary.

- `function_table` / `module_table`: self % (samples where it is the leaf) and total % (samples
  where it is anywhere on the stack, counted once per sample even when recursive), ordered by
  total (top-down) or by self (bottom-up).
- `call_tree` (top-down: callers to callees) and `caller_tree` (bottom-up: each leaf, then who
  called it), merged across threads.
- `summary`: "log_write 23 %, rpc_call 17.8 %, schedule 11.3 %": the components the time splits
  into. Starting from the outermost frames it walks down through frames that hold at least half
  the time without doing it themselves: wrappers that pass it to one callee (main) are skipped,
  dispatchers whose callees share it (an event loop) are split. It stops at frames under half
  the time or doing the work themselves, which keeps a chain together (log_write -> fwrite ->
  write is log_write) and a mid-sized component whole (rpc_call, not its encode and send).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from hone.diagnose.fold import Frame
from hone.diagnose.profile import Profile

Order = Literal["total", "self"]


@dataclass(frozen=True)
class Row:
    """One function or module: samples and shares of all samples (0..1)."""

    name: str
    module: str
    self_samples: int
    total_samples: int
    self_share: float
    total_share: float


def module_name(module: str) -> str:
    """A module as people say it: `libc.so.6`, `[kernel.kallsyms]`, `server`."""
    return module.rsplit("/", 1)[-1] if module else "?"


def function_table(profile: Profile, order: Order = "total") -> list[Row]:
    """Functions (keyed by name and module) by total or self share."""
    return _table(profile, lambda frame: (frame.function, frame.module), order)


def module_table(profile: Profile, order: Order = "total") -> list[Row]:
    """Modules (shared objects, executables, the kernel) by total or self share."""
    return _table(profile, lambda frame: (module_name(frame.module), ""), order)


def _table(profile: Profile, key_of, order: Order) -> list[Row]:
    self_counts: dict[tuple[str, str], int] = {}
    total_counts: dict[tuple[str, str], int] = {}
    for (_, frames), count in profile.stacks.items():
        if not frames:
            continue
        for key in {key_of(frame) for frame in frames}:
            total_counts[key] = total_counts.get(key, 0) + count
        leaf = key_of(frames[-1])
        self_counts[leaf] = self_counts.get(leaf, 0) + count
    grand = profile.total or 1
    rows = []
    for (name, module), total in total_counts.items():
        own = self_counts.get((name, module), 0)
        rows.append(Row(name, module, own, total, own / grand, total / grand))
    if order == "self":
        rows.sort(key=lambda r: (-r.self_samples, -r.total_samples, r.name))
    else:
        rows.sort(key=lambda r: (-r.total_samples, -r.self_samples, r.name))
    return rows


@dataclass
class Node:
    """A call tree node: `total` samples through it, `self` samples ending at it."""

    frame: Frame
    total: int = 0
    self: int = 0
    children: dict[Frame, Node] = field(default_factory=dict)

    def child(self, frame: Frame) -> Node:
        node = self.children.get(frame)
        if node is None:
            node = self.children[frame] = Node(frame)
        return node

    def sorted_children(self) -> list[Node]:
        return sorted(self.children.values(), key=lambda n: (-n.total, n.frame.function))


ROOT = Frame("all", "")


def call_tree(profile: Profile) -> Node:
    """Top-down: the root's children are the outermost frames of every thread."""
    return _tree(profile, reverse=False)


def caller_tree(profile: Profile) -> Node:
    """Bottom-up: the root's children are the leaf functions, each node's children its callers."""
    return _tree(profile, reverse=True)


def _tree(profile: Profile, reverse: bool) -> Node:
    root = Node(ROOT)
    for (_, frames), count in profile.stacks.items():
        if not frames:
            continue
        root.total += count
        node = root
        for frame in reversed(frames) if reverse else frames:
            node = node.child(frame)
            node.total += count
        node.self += count
    return root


def format_tree(root: Node, min_share: float = 0.01, max_depth: int = 30) -> str:
    """The tree as indented text lines `total% self% function`, pruned below `min_share`."""
    grand = root.total or 1
    lines: list[str] = []

    def walk(node: Node, depth: int) -> None:
        for child in node.sorted_children():
            if child.total / grand < min_share or depth >= max_depth:
                continue
            lines.append(
                f"{100 * child.total / grand:6.1f}% {100 * child.self / grand:6.1f}%  "
                f"{'  ' * depth}{child.frame.function}"
            )
            walk(child, depth + 1)

    walk(root, 0)
    return "\n".join(lines)


def format_table(rows: list[Row], limit: int = 20, title: str = "function") -> str:
    """Rows as a text table: self %, total %, name and module."""
    lines = [f"{'self %':>7} {'total %':>8}  {title}"]
    for row in rows[:limit]:
        where = f"  ({module_name(row.module)})" if row.module else ""
        lines.append(f"{100 * row.self_share:7.1f} {100 * row.total_share:8.1f}  {row.name}{where}")
    return "\n".join(lines)


def components(profile: Profile, limit: int = 6, min_share: float = 0.02) -> list[Node]:
    """The frames the time splits into (see the module docstring), largest first."""
    tree = call_tree(profile)
    grand = tree.total
    if not grand:
        return []
    floor = min_share * grand
    frontier = [tree]
    settled: list[Node] = []
    while frontier:
        frontier.sort(key=lambda n: -n.total)
        node = frontier.pop(0)
        kids = [c for c in node.sorted_children() if c.total >= floor]
        opaque = node.frame == ROOT or _unnamed(node.frame)
        if (opaque and kids) or (
            node.self < node.total / 2
            and node.total >= grand / 2
            and kids
            and ((len(kids) == 1 and kids[0].total >= 0.9 * node.total) or len(kids) >= 2)
        ):
            frontier.extend(kids)
        elif node.total >= floor:
            settled.append(node)
        if len(settled) >= limit:
            break
    return _merged(settled)[:limit]


def _unnamed(frame: Frame) -> bool:
    """An unsymbolised frame (code without frame pointers or symbols): `[unknown]`, or the
    `[module]` perf script gives it when it knows the module. It names nothing."""
    module = module_name(frame.module)
    return frame.function in ("[unknown]", f"[{module}]")


def _merged(settled: list[Node]) -> list[Node]:
    """One component per function, largest first: the same function settled under two callers
    (a `[module]` frame under two others) is one part of the time, not two lines of one name.
    Settled nodes are never inside one another, so their totals add up."""
    by_frame: dict[Frame, Node] = {}
    for node in settled:
        seen = by_frame.get(node.frame)
        by_frame[node.frame] = (
            Node(node.frame, seen.total + node.total, seen.self + node.self) if seen else node
        )
    return sorted(by_frame.values(), key=lambda n: -n.total)


def percent(share: float) -> str:
    """23.0 -> '23 %', 17.84 -> '17.8 %'."""
    text = f"{100 * share:.1f}".rstrip("0").rstrip(".")
    return f"{text} %"


def summary(profile: Profile, limit: int = 6) -> str:
    """One line: `component share, ...` (see `components`)."""
    grand = profile.total or 1
    parts = [f"{n.frame.function} {percent(n.total / grand)}" for n in components(profile, limit)]
    return ", ".join(parts) if parts else "no samples"
