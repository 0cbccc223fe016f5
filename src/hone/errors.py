"""User-facing errors: one line naming where the problem is, exit code 2, never a traceback."""

from __future__ import annotations

import re
from pathlib import Path

#: SQLAlchemy's link to its error catalogue, on a line of its own after every message.
_BACKGROUND = re.compile(r"\(Background on this error at: [^)]*\)")


class HoneError(Exception):
    """An error in the user's input or environment that hone explains in one line."""

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        key: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = str(file) if file is not None else None
        self.line = line
        self.key = key

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = self.file + (f":{self.line}" if self.line else "") + ": "
        key = f"{self.key}: " if self.key else ""
        return f"{where}{key}{self.message}"


class Stop(BaseException):
    """hone was asked to stop (SIGTERM). Like KeyboardInterrupt it is no Exception, so no
    handler of a trial's errors takes it for a failed trial and goes on with the study."""

    exit_code = 143


def stop_on_sigterm() -> None:
    """From now on SIGTERM (`timeout`, `kill`, systemd's stop) raises Stop in the main thread,
    so it unwinds like Ctrl-C through the `finally` and `except BaseException` blocks that
    stop hone's children and finish its files, and hone exits 143. Python's default ends the
    process where it stands: children in sessions of their own (perf record, a diagnosed
    command) would go on without it."""
    import signal

    def _stop(signum: int, frame: object) -> None:
        raise Stop("stopped by SIGTERM")

    signal.signal(signal.SIGTERM, _stop)


class ActuationError(HoneError):
    """A knob could not be read or set; fails the trial, not the study."""


class BenchmarkError(HoneError):
    """The benchmark or a metric command failed; fails the trial, not the study."""


class HostUnreachable(HoneError):
    """A cluster host the trial needs apart from its knobs (the benchmark's, a metric's)
    cannot be reached: not the configuration's doing, so it stops the study instead of
    failing this trial and every one after it (each proposal then learnt as a failure)."""


def one_line(text: str, limit: int = 300) -> str:
    """A library's error text as one line of hone's: libraries (SQLAlchemy, psycopg) spread
    theirs over several lines and end them with a link, which would break `hone: ...`."""
    return " ".join(_BACKGROUND.sub("", text).split())[:limit]
