"""`hone CMD` imports only the capability that defines CMD; the table saying which defines
which is what the capabilities register, and help still lists every command."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import typer

from hone.cli.main import CAPABILITIES


def test_the_table_names_every_command_each_capability_registers() -> None:
    for module, commands in CAPABILITIES.items():
        app = typer.Typer()
        importlib.import_module(module).register(app)
        names = [c.name for c in app.registered_commands]
        names += [g.name for g in app.registered_groups]
        assert sorted(names) == sorted(commands), module


def test_a_command_imports_its_capability_alone(hone_home) -> None:
    """`hone profile list` loads neither the collector nor diagnose's machine description."""
    script = (
        "import json, sys\n"
        "from hone.cli.main import run\n"
        "sys.argv = ['hone', 'profile', 'list', '--json']\n"
        "try:\n    run()\nexcept SystemExit as end:\n    code = end.code\n"
        "loaded = [m for m in ('hone.collect', 'hone.diagnose.machine', 'hone.tune.cli',"
        " 'hone.serve.cli', 'hone.profiles.cli') if m in sys.modules]\n"
        "print(json.dumps({'code': code, 'loaded': loaded}), file=sys.stderr)\n"
    )
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    result = json.loads(ran.stderr.strip().splitlines()[-1])
    assert result == {"code": 0, "loaded": ["hone.profiles.cli"]}, ran.stderr
    assert any(p["name"] == "hone-web" for p in json.loads(ran.stdout))


def test_help_still_lists_every_command(hone_cli) -> None:
    helped = hone_cli("--help")
    assert helped.returncode == 0
    for commands in CAPABILITIES.values():
        for command in commands:
            assert f"  {command} " in helped.stdout, command


def test_help_names_the_global_server_option(hone_cli) -> None:
    """`hone --server URL studies` works (README, docs/serve.md), so `hone --help` says so."""
    helped = hone_cli("--help")
    assert "hone --server URL COMMAND" in helped.stdout, helped.stdout
