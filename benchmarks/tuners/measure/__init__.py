"""Measure a grid of settings of a real program into a tabular tuner task (format:
shared/spec/tabular-tasks.md): one module per program, and the walk over the grid they share."""

from __future__ import annotations

import csv
import itertools
import os
import random
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

TASKS = Path(__file__).resolve().parents[1] / "tasks"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def walk_grid(
    grid: dict[str, list[Any]],
    name: str,
    metric: str,
    reps: int,
    measure: Callable[[dict[str, Any]], float | None],
) -> None:
    """Every configuration of `grid` measured `reps` times into tasks/NAME.csv, each repetition
    in a new random order (so repeated measurements of a configuration are minutes apart); a
    failed measurement is an empty `metric`, and every row records the 1-minute load average."""
    configs = [dict(zip(grid, values, strict=True)) for values in itertools.product(*grid.values())]
    rng = random.Random(0)
    TASKS.mkdir(exist_ok=True)
    with open(TASKS / f"{name}.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([*grid, metric, "rep", "load1"])
        for rep in range(reps):
            order = configs[:]
            rng.shuffle(order)
            for config in order:
                value = measure(config)
                load = f"{os.getloadavg()[0]:.2f}"
                writer.writerow([*config.values(), "" if value is None else value, rep, load])
                handle.flush()


def task_yaml(
    comment: str, grid: dict[str, list[Any]], default: dict[str, Any], metric: str
) -> str:
    """The task's YAML (maximised): the comment's lines, then each knob with its type read from
    its values, the objective and the default; strings quoted, so `off` stays text."""
    kinds = {bool: "bool", int: "int", float: "float", str: "categorical"}

    def text(value: Any) -> str:
        if isinstance(value, bool):
            return str(value).lower()
        return f'"{value}"' if isinstance(value, str) else str(value)

    knobs = "".join(
        f"  {name}: {{type: {kinds[type(values[0])]}, values: [{', '.join(map(text, values))}]}}\n"
        for name, values in grid.items()
    )
    defaults = ", ".join(f"{name}: {text(value)}" for name, value in default.items())
    return (
        "".join(f"# {line}\n" for line in comment.splitlines())
        + f"knobs:\n{knobs}objective: {{metric: {metric}, direction: maximize}}\n"
        + f"default: {{{defaults}}}\n"
    )
