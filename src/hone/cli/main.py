"""The `hone` command: one Typer app; each capability adds its commands from its own `cli` module.

User errors (HoneError) end as one line on stderr and exit code 2, never a traceback."""

from __future__ import annotations

import gc
import importlib
import importlib.util
import json
import sys
import traceback

import typer

from hone.errors import HoneError, Stop, one_line
from hone.output import help_settings, tolerant_streams

app = typer.Typer(
    name="hone",
    help="A performance engineer for Linux servers: tune, analyze, diagnose, serve.",
    # handled before Click parses (`_remote_form`), so Click would not list it by itself
    epilog="hone --server URL COMMAND: run a `hone remote` command against a remote hone serve.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    **help_settings(),
)

#: Modules that define `register(app)`, with the commands each adds; a capability that is not
#: installed is simply absent. `hone CMD` imports only CMD's module: the others bring the
#: collector, the diagnose folding and serve's client with them, which a command that does not
#: use them need not wait for. Help and unknown commands import them all.
CAPABILITIES = {
    "hone.tune.cli": ("tune", "worker", "restore", "studies", "show", "check", "convert", "report"),
    "hone.diagnose.cli": ("diagnose", "diagnoses"),
    "hone.collect.cli": ("collect",),
    "hone.analyze.cli": ("analyze", "train"),
    "hone.profiles.cli": ("profile", "new"),
    "hone.serve.cli": ("serve", "remote"),
}
_registered: set[str] = set()


def register_capabilities(argv: list[str]) -> None:
    """Register the capability that defines the command in `argv`, else every one (once each:
    `run` may be called again in one process)."""
    command = argv[0] if argv else ""
    if command == "version":
        return
    wanted = [name for name, commands in CAPABILITIES.items() if command in commands]
    for name in wanted or CAPABILITIES:
        if name in _registered:
            continue
        _registered.add(name)
        if importlib.util.find_spec(name.rsplit(".", 1)[0]) is None:
            continue
        if importlib.util.find_spec(name) is None:
            continue
        importlib.import_module(name).register(app)


@app.callback()
def main() -> None:
    """A performance engineer for Linux servers."""


@app.command()
def version() -> None:
    """Print hone's version."""
    from hone import __version__

    typer.echo(f"hone {__version__}")


def _remote_form(argv: list[str]) -> list[str]:
    """`hone --server URL studies` is `hone remote --server URL studies`: a global --server
    sends the command to a remote `hone serve`."""
    if argv and (argv[0] == "--server" or argv[0].startswith("--server=")):
        return ["remote", *argv]
    return argv


def _is_usage_error(exc: Exception) -> bool:
    """Click's errors (bad options, unknown commands), whichever copy of Click Typer uses."""
    return hasattr(exc, "format_message") and getattr(exc, "exit_code", None) == 2


def _is_storage_error(exc: Exception) -> bool:
    """An error raised inside the study storage (SQLAlchemy, Optuna's RDB layer): a damaged,
    locked or unreachable database, or attributes that are not JSON."""
    if type(exc).__module__.startswith("sqlalchemy"):
        return True
    frames = traceback.extract_tb(exc.__traceback__)
    if isinstance(exc, json.JSONDecodeError):  # an attribute hone's own queries read
        return any("/hone/storage/" in frame.filename for frame in frames)
    return any("/optuna/storages/" in frame.filename for frame in frames)


def _root(exc: BaseException) -> str:
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return one_line(str(exc))


def _file_problem(exc: OSError) -> str | None:
    """`PATH: Is a directory` for a file hone was told to read or write (-o DIR, a folder
    that is not there); None for other OS errors (a closed pipe), which are not the user's."""
    if exc.filename is None or exc.strerror is None:
        return None
    return f"{exc.filename}: {exc.strerror}"


def run() -> None:
    """Entry point: run the app, turning user errors (bad input, bad options) into one clear
    line and exit code 2."""
    tolerant_streams()
    try:
        _run()
    finally:
        # Nothing is left to collect: the interpreter's collections at exit over the heap of
        # Optuna, SQLAlchemy and SciPy took 0.4-0.8 s of every command. Files, pipes and the
        # study store are closed by then (finalizers and atexit still run).
        gc.freeze()


def _run() -> None:
    argv = _remote_form(sys.argv[1:])
    try:
        register_capabilities(argv)
        code = app(args=argv, prog_name="hone", standalone_mode=False)
        sys.exit(code if isinstance(code, int) else 0)
    except HoneError as exc:
        print(f"hone: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except typer.Abort:
        print("hone: aborted", file=sys.stderr)
        sys.exit(1)
    except OSError as exc:
        problem = _file_problem(exc)
        if problem is None:
            raise
        print(f"hone: {problem}", file=sys.stderr)
        sys.exit(2)
    except Exception as exc:
        if _is_storage_error(exc):
            print(f"hone: the study database cannot be used: {_root(exc)}", file=sys.stderr)
            sys.exit(2)
        if not _is_usage_error(exc):
            raise
        if type(exc).__name__ == "NoArgsIsHelpError":
            exc.show()  # type: ignore[attr-defined]  # plain `hone`: the help
        else:
            ctx = getattr(exc, "ctx", None)
            command = ctx.command_path.partition(" ")[2] if ctx is not None else ""
            where = f"{command}: " if command else ""
            print(f"hone: {where}{exc.format_message()}", file=sys.stderr)  # type: ignore[attr-defined]
        sys.exit(2)
    except Stop as exc:
        print(f"hone: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
