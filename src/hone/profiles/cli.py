"""`hone profile list | info | apply | rollback | check | define | update | undefine`."""

from __future__ import annotations

import shutil
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from hone.errors import HoneError

profile_app = typer.Typer(help="Static tuning profiles (A-Tune's format), applied as transactions.")


def register(app: typer.Typer) -> None:
    app.add_typer(profile_app, name="profile")


def _library():
    from hone.profiles import ProfileLibrary

    return ProfileLibrary()


@profile_app.command("list")
def list_profiles() -> None:
    """Every profile hone can find (its own, then HONE_PROFILE_PATH folders)."""
    from hone.profiles import active_profile

    active = active_profile()
    for name, path in sorted(_library().names().items()):
        typer.echo(f"{'*' if name == active else ' '} {name}  ({path})")


@profile_app.command("info")
def info(name: str) -> None:
    """A profile's items after includes, by section."""
    profile = _library().load(name)
    table = Table("section", "key", "value", "from")
    for item in profile.items:
        table.add_row(item.section, item.key, item.value, item.source)
    Console(highlight=False).print(f"profile {profile.name} ({profile.path})", table)


@profile_app.command("apply")
def apply(name: str) -> None:
    """Apply a profile (rolling back the active one first); all or nothing."""
    from hone.profiles import apply_profile

    outcomes = apply_profile(_library().load(name))
    for outcome in outcomes:
        detail = f"  ({outcome.detail})" if outcome.detail else ""
        typer.echo(
            f"{outcome.status:8s} [{outcome.item.section}] {outcome.item.key} = "
            f"{outcome.item.value}{detail}"
        )
    typer.echo(f"applied {name}: {sum(o.status == 'set' for o in outcomes)} settings changed")


@profile_app.command("rollback")
def rollback_command() -> None:
    """Put back every setting the active profile changed, newest first."""
    from hone.profiles import rollback

    restored = rollback()
    for line in restored:
        typer.echo(f"restored {line}")
    typer.echo(f"rolled back {len(restored)} settings")


@profile_app.command("check")
def check(name: str = typer.Argument(None, help="default: the active profile")) -> None:
    """Compare the live system with a profile."""
    from hone.profiles import active_profile, check_profile

    name = name or active_profile()
    if not name:
        raise HoneError("no active profile: name one")
    outcomes = check_profile(_library().load(name))
    for outcome in outcomes:
        typer.echo(
            f"{outcome.status:8s} [{outcome.item.section}] {outcome.item.key} = "
            f"{outcome.item.value}  {outcome.detail}"
        )
    if any(o.status == "differs" for o in outcomes):
        raise typer.Exit(1)


def _own(name: str) -> Path:
    from hone.paths import state_dir

    if "/" in name or name.startswith("."):
        raise HoneError(f"profile name {name!r} must not contain '/'")
    return state_dir() / "profiles" / f"{name}.conf"


@profile_app.command("define")
def define(name: str, file: Path) -> None:
    """Add a profile of your own from an INI file."""
    target = _own(name)
    if target.exists():
        raise HoneError(f"profile {name!r} exists: use `hone profile update`")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(file, target)
    _library().load(name)  # a broken file is refused now, not at apply time
    typer.echo(f"defined {name}")


@profile_app.command("update")
def update(name: str, file: Path) -> None:
    """Replace a profile of your own."""
    target = _own(name)
    if not target.exists():
        raise HoneError(f"no profile of your own named {name!r}")
    shutil.copyfile(file, target)
    typer.echo(f"updated {name}")


@profile_app.command("undefine")
def undefine(name: str) -> None:
    """Remove a profile of your own."""
    target = _own(name)
    if not target.exists():
        raise HoneError(f"no profile of your own named {name!r}")
    target.unlink()
    typer.echo(f"undefined {name}")
