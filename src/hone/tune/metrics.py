"""Taking metric values out of a benchmark's output.

A regex (hone's format) reads the output directly. An A-Tune `get` command with `$out` gets the
output through a file, never pasted into the command, so any content is safe: quotes, `$`,
backticks or megabytes. The file is an anonymous one in memory (memfd) that the command inherits,
so a hone killed while the command runs leaves no copy of the output behind."""

from __future__ import annotations

import os
import re
from pathlib import Path

from hone import shell
from hone.errors import BenchmarkError
from hone.project.model import Metric

OUT_FILE_VARIABLE = "HONE_OUT_FILE"
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def parse_number(text: str, what: str) -> float:
    """The value printed: the last non-empty line must be a number (A-Tune: a float)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        raise BenchmarkError(f"{what}: no value (empty)")
    last = lines[-1].replace(",", "")
    try:
        value = float(last)
    except ValueError:
        raise BenchmarkError(f"{what}: {lines[-1][:80]!r} is not a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise BenchmarkError(f"{what}: {last!r} is not a finite number")
    return value


def _ending(output: str) -> str:
    last = next((line.strip() for line in reversed(output.splitlines()) if line.strip()), "")
    return f"the output's last line: {last[:120]}" if last else "the output was empty"


def extract(
    metric: Metric, output: str, *, cwd: str | Path | None = None, timeout: float = 60.0
) -> float:
    """The metric's value in this output; BenchmarkError with the reason when there is none."""
    if metric.pattern is not None:
        matches = list(re.finditer(metric.pattern, output, re.MULTILINE))
        if not matches:
            # the pattern as the project spells it (a repr doubles every backslash), and where
            # the output ended: memcaslap's missing result line, a usage message, an error
            raise BenchmarkError(
                f"metric {metric.name}: pattern '{metric.pattern}' not found; {_ending(output)}"
            )
        return parse_number(matches[-1].group(1), f"metric {metric.name}")
    assert metric.command is not None
    with open(os.memfd_create("hone-out"), "w") as handle:
        handle.write(output)
        handle.flush()
        command = shell.render(metric.command, {"$out": '$(cat "${' + OUT_FILE_VARIABLE + '}")'})
        fd = handle.fileno()
        argv, env = ["/bin/sh", "-c", command], {OUT_FILE_VARIABLE: f"/dev/fd/{fd}"}
        result = shell.run_argv(argv, env=env, timeout=timeout, cwd=cwd, pass_fds=(fd,))
    if result.timed_out:
        raise BenchmarkError(f"metric {metric.name}: command timed out after {timeout:g}s")
    if result.returncode != 0 and not result.stdout.strip():
        raise BenchmarkError(
            f"metric {metric.name}: command exited {result.returncode}: {result.tail()}"
        )
    return parse_number(result.stdout, f"metric {metric.name}")
