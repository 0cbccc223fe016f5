"""Running user-written shell commands safely.

A-Tune substitutes `$value` and `$out` into command text, so a value with a quote in it can break
or inject shell. hone keeps the same templates but replaces each placeholder with a reference to an
environment variable (or a file, for megabytes of output), quoted for the context it appears in:
the value itself is never parsed by the shell."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass

_NORMAL, _SINGLE, _DOUBLE, _BACKTICK = "normal", "single", "double", "backtick"
_HONE_VARIABLE = re.compile(r"\$\{(HONE_[A-Z_]+)\}|\$(HONE_[A-Z_]+)")


def expand(text: str) -> str:
    """Expand hone's own $HONE_* variables in a path or an argument (no shell involved)."""
    return _HONE_VARIABLE.sub(lambda m: os.environ.get(m.group(1) or m.group(2), ""), text)


def _quoted(expansion: str, context: str) -> str:
    """The expansion written so that it yields exactly one literal string in this context."""
    if context == _SINGLE:
        return "'\"" + expansion + "\"'"
    if context == _DOUBLE:
        return expansion
    return '"' + expansion + '"'


def render(template: str, expansions: Mapping[str, str]) -> str:
    """Replace each placeholder (e.g. `$value`) by its shell expansion (e.g. `${HONE_VALUE}`),
    quoted for the quoting context at that position of the template."""
    out: list[str] = []
    stack: list[str] = [_NORMAL]
    i, n = 0, len(template)
    ordered = sorted(expansions, key=len, reverse=True)
    while i < n:
        context = stack[-1]
        placeholder = next((p for p in ordered if template.startswith(p, i)), None)
        if placeholder is not None:
            out.append(_quoted(expansions[placeholder], context))
            i += len(placeholder)
            continue
        ch = template[i]
        out.append(ch)
        i += 1
        if context == _SINGLE:
            if ch == "'":
                stack.pop()
        elif ch == "\\" and context != _SINGLE and i < n:
            out.append(template[i])
            i += 1
        elif context == _DOUBLE and ch == '"':
            stack.pop()
        elif ch == "$" and i < n and template[i] == "(":
            out.append("(")
            i += 1
            stack.append(_NORMAL)
        elif ch == "`":
            if context == _BACKTICK:
                stack.pop()
            else:
                stack.append(_BACKTICK)
        elif context in (_NORMAL, _BACKTICK):
            if ch == "'":
                stack.append(_SINGLE)
            elif ch == '"':
                stack.append(_DOUBLE)
            elif ch == ")" and len(stack) > 1 and context == _NORMAL:
                stack.pop()
    return "".join(out)


@dataclass(frozen=True)
class Result:
    """What a finished command did."""

    command: str
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def tail(self, lines: int = 3) -> str:
        """The last lines of stderr (else stdout), for a one-line error message."""
        text = (self.stderr.strip() or self.stdout.strip()).splitlines()
        return " | ".join(text[-lines:])[:400]


def run(
    command: str,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> Result:
    """Run `sh -c command` in its own process group; on timeout the whole group is killed."""
    full_env = {**os.environ, **(env or {})}
    started = time.monotonic()
    proc = subprocess.Popen(
        ["/bin/sh", "-c", command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=full_env,
        cwd=cwd,
        start_new_session=True,
    )
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc.pid)
        out, err = proc.communicate()
    except BaseException:
        _kill_group(proc.pid)
        proc.wait()
        raise
    return Result(
        command,
        proc.returncode,
        out.decode(errors="replace"),
        err.decode(errors="replace"),
        time.monotonic() - started,
        timed_out,
    )


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
