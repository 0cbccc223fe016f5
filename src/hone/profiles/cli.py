"""`hone profile list | info | apply | rollback | check | define | update | undefine`."""

from __future__ import annotations

from pathlib import Path

import typer

from hone.output import DataTable, help_settings, output_console, print_json
from hone.shell import command_line

profile_app = typer.Typer(
    help="Static tuning profiles (A-Tune's format), applied as transactions.", **help_settings()
)
JSON = typer.Option(False, "--json", help="machine-readable output")


def register(app: typer.Typer) -> None:
    app.add_typer(profile_app, name="profile")
    app.command(name="new")(new)


def new(
    folder: Path = typer.Argument(..., help="the project's folder (hone.yaml is written in it)"),
    from_profile: str = typer.Option(None, "--from-profile", help="a profile's name"),
    workload: str = typer.Option(
        None, "--workload", help="an application (memcached, nginx, ...) or workload class"
    ),
    catalogue: Path = typer.Option(
        None, "--catalogue", help="A-Tune's tuning_params_all.yaml, for ranges hone lacks"
    ),
    benchmark: str = typer.Option(None, "--benchmark", help="the benchmark command"),
    metric: str = typer.Option(
        None, "--metric", help="NAME=REGEX: the figure in the benchmark's output (one group)"
    ),
    minimize: bool = typer.Option(False, "--minimize", help="smaller is better"),
    as_json: bool = JSON,
) -> None:
    """Start a tuning project from a static profile: its knobs, ranges, its values first."""
    import os

    from hone.errors import HoneError
    from hone.profiles import load
    from hone.profiles import start as starting

    if (from_profile is None) == (workload is None):
        raise HoneError("give one of --from-profile NAME or --workload APP")
    figure = starting.metric_option(metric, minimize) if metric is not None else None
    profile = load(from_profile or starting.profile_for(workload))
    source = catalogue or os.environ.get("HONE_ATUNE_CATALOGUE")
    atune = starting.atune_catalogue(Path(source)) if source else None
    drafted, left = starting.draft(profile, atune)
    path = starting.write(folder, profile, drafted, left, benchmark, figure)
    if as_json:
        print_json({"project": str(path), "profile": profile.name,
                    "knobs": [{"name": d.name, "start": d.start, "range_from": d.source,
                               **d.knob} for d in drafted],
                    "left_out": left})  # fmt: skip
        return
    typer.echo(f"project: {path} (profile {profile.name}, {len(drafted)} knobs)")
    for d in drafted:
        typer.echo(f"  {d.name} = {d.start}  (range from {d.source})")
    for line in left:
        typer.echo(f"  left out: {line}")
    typer.echo(f"check it with: {command_line(['hone', 'check', str(path.parent)])}")


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


def apply_data(result) -> dict:  # type: ignore[no-untyped-def]
    """`hone profile apply --json` (and the `applied` part of `hone analyze --apply --json`)."""
    return {
        "profile": result.profile,
        "changed": result.changed,
        "previous": result.previous,
        "items": [
            {**_item(o.item), "status": o.status, "detail": o.detail} for o in result.outcomes
        ],
    }


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
    table = DataTable("section", "key", "value", "from")
    for item in profile.items:
        table.add_row(item.section, item.key, item.value, item.source)
    # the name and path as given: `web[x]` is a profile, not a markup tag (the cells are Text)
    output_console().print(f"profile {profile.name} ({profile.path})", table, markup=False)
    _placeholders(profile.placeholders)


@profile_app.command("apply")
def apply(name: str, as_json: bool = JSON) -> None:
    """Apply a profile (rolling back the active one first); all or nothing."""
    from hone.errors import stop_on_sigterm
    from hone.profiles import apply as apply_named

    stop_on_sigterm()  # `timeout`, `kill`: what was set is rolled back, as on Ctrl-C
    result = apply_named(name)
    if as_json:
        print_json(apply_data(result))
    else:
        print_apply(result)


@profile_app.command("rollback")
def rollback_command(as_json: bool = JSON) -> None:
    """Put back every setting the active profile changed, newest first."""
    from hone.profiles import rollback

    restored = rollback()
    if as_json:
        print_json({"restored": restored})
        return
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
