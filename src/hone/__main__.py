"""`python -m hone` is the `hone` command."""

from hone.cli.main import run

run()
