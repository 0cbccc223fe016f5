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


def run() -> None:
    """Entry point: run the app, turning user errors into one clear line."""
    try:
        app(args=_remote_form(sys.argv[1:]))
    except HoneError as exc:
        print(f"hone: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("hone: interrupted", file=sys.stderr)
        sys.exit(130)
