"""How a run ends when it is stopped: SIGTERM as an exception, a shield while the knobs go back,
and the one error that says whether they are back."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from optuna.exceptions import StorageInternalError
from sqlalchemy.exc import SQLAlchemyError

from hone.errors import HoneError, HostUnreachable, Stop
from hone.storage.outage import DatabaseLost


class Stopped(Stop):
    """hone was asked to stop (SIGTERM); the run puts every knob back before it exits."""


class Interrupted(Stop):
    """Ctrl-C (SIGINT) ended the run once its knobs were put back, or not all of them."""

    exit_code = 130


class OutputClosed(Stop):
    """The run's output was closed (`hone tune ... | head`): Rich ends the program, as SIGPIPE
    would; the run puts every knob back first and says so on stderr."""

    exit_code = 141  # as a shell reports a program ended by SIGPIPE


#: The stop signals that reached the run (SIGINT, SIGTERM), in case the exception their
#: handler raised was lost: Python drops an exception raised in a finaliser (`__del__`, such
#: as a finished Popen's), and a signal handled while one runs ended in "Exception ignored".
_ASKED: list[int] = []


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Turn SIGTERM and SIGINT into exceptions, so a stopped run still restores and records,
    and remember them, so that `check_stop` ends the run at its next reading should the
    exception have been lost. Not on another thread, which would forget the main thread's."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        _ASKED.append(signum)
        raise _stop_exception(signum)

    _ASKED.clear()
    try:
        with _handled_by(stop):
            yield
    finally:
        _ASKED.clear()


def check_stop() -> None:
    """Raise the stop a signal asked for, if its own exception went astray."""
    if _ASKED:
        raise _stop_exception(_ASKED[0])


def _stop_exception(signum: int) -> BaseException:
    return KeyboardInterrupt() if signum == signal.SIGINT else Stopped("stopped by SIGTERM")


@contextmanager
def shielded() -> Iterator[None]:
    """SIGINT and SIGTERM do nothing while a stopping run puts its knobs back: a second Ctrl-C
    or a repeated SIGTERM would cut the restore short and leave knobs changed. (A handler, not
    SIG_IGN, which the commands run meanwhile, a service's restart among them, would inherit.)"""
    with _handled_by(_ignore):
        yield


def _ignore(signum: int, frame: object) -> None:
    """A signal that arrives while knobs are being put back."""


@contextmanager
def _handled_by(handler: Callable[[int, object], None]) -> Iterator[None]:
    """`handler` takes SIGINT and SIGTERM while the block runs; the previous handlers take
    them again after it. Not on another thread: only the main one may set handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, earlier in previous.items():
            signal.signal(sig, earlier)


def stop_error(exc: BaseException, back: bool, project: str) -> BaseException:
    """What a stopped run raises once it has tried to put its knobs back: `exc` in words that
    say whether every knob is back."""
    where = "every knob put back" if back else f"knobs not all put back: `hone restore {project}`"
    if isinstance(exc, HostUnreachable):  # a host gone is not the configuration's doing
        return HoneError(f"stopped, {where}: {exc} (`hone tune --resume` goes on once it answers)")
    if isinstance(exc, OSError | SQLAlchemyError | StorageInternalError | DatabaseLost):
        # a full disk, a lost database: said in one line, after the knobs are back
        return HoneError(f"stopped, {where}: {first_line(exc)}")
    if isinstance(exc, Stopped):
        return Stopped(f"stopped by SIGTERM; {where}")
    if isinstance(exc, KeyboardInterrupt):  # said, not left to Typer's silent exit 130
        return Interrupted(f"interrupted; {where}")
    if isinstance(exc, SystemExit) and isinstance(exc.__context__, BrokenPipeError):
        # Rich's answer to a closed stdout: a silent exit 1, which said nothing of the knobs
        return OutputClosed(f"stopped: its output was closed (broken pipe); {where}")
    return exc


def first_line(exc: BaseException) -> str:
    """The root cause's first line (storage errors wrap the database's own words)."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
