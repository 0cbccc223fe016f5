"""The `hone` command: one Typer app; each capability adds its commands from its own `cli` module.

User errors (HoneError) end as one line on stderr and exit code 2, never a traceback."""

from __future__ import annotations

import importlib
import importlib.util
import sys

import typer

from hone.errors import HoneError

app = typer.Typer(
    name="hone",
    help="A performance engineer for Linux servers: tune, analyze, diagnose, serve.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: Modules that define `register(app)`; a capability that is not installed is simply absent.
CAPABILITIES = (
    "hone.tune.cli",
    "hone.diagnose.cli",
    "hone.collect.cli",
    "hone.analyze.cli",
    "hone.profiles.cli",
    "hone.serve.cli",
)


def _register_capabilities() -> None:
    for name in CAPABILITIES:
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


_register_capabilities()


def _remote_form(argv: list[str]) -> list[str]:
    """`hone --server URL studies` is `hone remote --server URL studies`: a global --server
    sends the command to a remote `hone serve`."""
    if argv and (argv[0] == "--server" or argv[0].startswith("--server=")):
        return ["remote", *argv]
    return argv


def _is_usage_error(exc: Exception) -> bool:
    """Click's errors (bad options, unknown commands), whichever copy of Click Typer uses."""
    return hasattr(exc, "format_message") and getattr(exc, "exit_code", None) == 2


def run() -> None:
    """Entry point: run the app, turning user errors (bad input, bad options) into one clear
    line and exit code 2."""
    try:
        code = app(args=_remote_form(sys.argv[1:]), prog_name="hone", standalone_mode=False)
        sys.exit(code if isinstance(code, int) else 0)
    except HoneError as exc:
        print(f"hone: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except typer.Abort:
        print("hone: aborted", file=sys.stderr)
        sys.exit(1)
    except Exception as exc:
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
    except KeyboardInterrupt:
        print("hone: interrupted", file=sys.stderr)
        sys.exit(130)
