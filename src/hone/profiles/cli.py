"""`hone profile list | info | apply | rollback | check | define | update | undefine`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from hone.output import output_console, print_json

profile_app = typer.Typer(help="Static tuning profiles (A-Tune's format), applied as transactions.")


def register(app: typer.Typer) -> None:
    app.add_typer(profile_app, name="profile")


def _placeholders(placeholders: dict[str, tuple[str, str]]) -> None:
    for name, (value, how) in sorted(placeholders.items()):
        typer.echo(f"{{{name}}} = {value} ({how})")


def print_apply(result) -> None:  # type: ignore[no-untyped-def]
    """The lines of `hone profile apply` (also used by `hone analyze --apply`)."""
    if result.previous:
        typer.echo(f"rolled back {result.previous} ({len(result.restored)} settings)")
    _placeholders(result.placeholders)
    for outcome in result.outcomes:
        detail = f"  ({outcome.detail})" if outcome.detail else ""
        typer.echo(
            f"{outcome.status:9s} [{outcome.item.section}] {outcome.item.key} = "
            f"{outcome.item.value}{detail}"
        )
    typer.echo(f"applied {result.profile}: {result.changed} settings changed")


JSON = typer.Option(False, "--json", help="machine-readable output")


def _item(item) -> dict:  # type: ignore[no-untyped-def]
    return {"section": item.section, "key": item.key, "value": item.value, "from": item.source}


@profile_app.command("list")
def list_command(as_json: bool = JSON) -> None:
    """Every profile hone can find (* = active)."""
    from hone.profiles import list_profiles

    if as_json:
        print_json(
            [{"name": i.name, "path": str(i.path), "active": i.active} for i in list_profiles()]
        )
        return
    for info in list_profiles():
        typer.echo(f"{'*' if info.active else ' '} {info.name}  ({info.path})")


@profile_app.command("info")
def info(name: str, as_json: bool = JSON) -> None:
    """A profile's items after includes, by section."""
    from hone.profiles import load

    profile = load(name)
    if as_json:
        placeholders = {k: {"value": v, "how": how} for k, (v, how) in profile.placeholders.items()}
        print_json(
            {
                "name": profile.name,
                "path": str(profile.path),
                "includes": profile.includes,
                "items": [_item(i) for i in profile.items],
                "placeholders": placeholders,
            }
        )
        return
    table = Table("section", "key", "value", "from")
    for item in profile.items:
        table.add_row(item.section, item.key, item.value, item.source)
    output_console().print(f"profile {profile.name} ({profile.path})", table)
    _placeholders(profile.placeholders)


@profile_app.command("apply")
def apply(name: str) -> None:
    """Apply a profile (rolling back the active one first); all or nothing."""
    from hone.profiles import apply as apply_named

    print_apply(apply_named(name))


@profile_app.command("rollback")
def rollback_command() -> None:
    """Put back every setting the active profile changed, newest first."""
    from hone.profiles import rollback

    restored = rollback()
    for line in restored:
        typer.echo(f"restored {line}")
    typer.echo(f"rolled back {len(restored)} settings")


@profile_app.command("check")
def check(
    name: str = typer.Argument(None, help="default: the active profile"), as_json: bool = JSON
) -> None:
    """Compare the live system with a profile; exit 1 when something differs."""
    from hone.profiles import check as check_named

    outcomes = check_named(name)
    if as_json:
        print_json([{**_item(o.item), "status": o.status, "detail": o.detail} for o in outcomes])
    for outcome in outcomes if not as_json else ():
        typer.echo(
            f"{outcome.status:9s} [{outcome.item.section}] {outcome.item.key} = "
            f"{outcome.item.value}  {outcome.detail}"
        )
    if any(o.status == "differs" for o in outcomes):
        raise typer.Exit(1)


@profile_app.command("define")
def define(name: str, file: Path) -> None:
    """Add a profile of your own from an INI file."""
    from hone.profiles import define as define_named

    define_named(name, file)
    typer.echo(f"defined {name}")


@profile_app.command("update")
def update(name: str, file: Path) -> None:
    """Replace a profile of your own."""
    from hone.profiles import update as update_named

    update_named(name, file)
    typer.echo(f"updated {name}")


@profile_app.command("undefine")
def undefine(name: str) -> None:
    """Remove a profile of your own."""
    from hone.profiles import undefine as undefine_named

    undefine_named(name)
    typer.echo(f"undefined {name}")
