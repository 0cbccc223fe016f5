"""`hone analyze` (recognise the workload, name the bottleneck, optionally apply the profile)
and `hone train` (a model of your own from collected CSV files)."""

from __future__ import annotations

from pathlib import Path

import typer

from hone.analyze.window import WINDOW_SECONDS, check_duration
from hone.cli.values import check_interval, finite_float
from hone.errors import HoneError
from hone.output import print_json
from hone.shell import command_line


def register(app: typer.Typer) -> None:
    app.command("analyze")(analyze_command)
    app.command("train")(train_command)


def _models_dir() -> Path:
    from hone.paths import state_dir

    return state_dir() / "analyze" / "models"


def _model(name: str):  # type: ignore[no-untyped-def]
    path = Path(name)
    if not path.suffix:
        path = _models_dir() / f"{name}.pkl"
        if not path.exists():
            raise HoneError(f"no model named {name!r}: train one with `hone train`")
    try:  # hone's models are pickles, which start with PROTO: others are refused before
        with path.open("rb") as file:  # loading the model imports scikit-learn (a second)
            start = file.read(1)
    except FileNotFoundError:
        raise HoneError("no such model file", file=path) from None
    if start != b"\x80":
        raise HoneError("not a hone model (not a pickle): retrain it", file=path)
    from hone.analyze.model import load

    return load(path)


def analyze_command(
    duration: float = typer.Option(
        WINDOW_SECONDS,
        "--duration",
        "-d",
        help="seconds to sample (the models' window)",
        parser=finite_float,
    ),
    interval: float = typer.Option(
        1.0, "--interval", "-i", help="seconds between samples", parser=finite_float
    ),
    apply: bool = typer.Option(False, "--apply", help="apply the profile mapped to the class"),
    min_confidence: float = typer.Option(
        0.5,
        "--min-confidence",
        help="--apply only when the class is at least this likely",
        parser=finite_float,
    ),
    model: str = typer.Option(
        None,
        "--model",
        "-m",
        help="a model from `hone train` (name or file); default: hone's, with hardware counters "
        "where the machine counts them",
    ),
    as_json: bool = typer.Option(False, "--json", help="the analysis as JSON"),
) -> None:
    """Sample the machine, name the workload class and its bottleneck (USE)."""
    check_interval(interval)
    if not 0 <= min_confidence <= 1:
        raise HoneError("--min-confidence must be between 0 and 1")
    check_duration(duration, interval)
    chosen = None if model is None else _model(model)
    # the classifier's scikit-learn takes a second to import: bad options are answered first
    from hone.analyze import analysis as analysis_module

    result = analysis_module.analyze(duration, interval, model=chosen, name=model or "default")
    if not as_json:
        _print(result)
    data = result.to_dict()
    if apply:
        from hone.analyze import apply as apply_profile
        from hone.profiles.cli import apply_data, print_apply

        try:
            if result.confidence < min_confidence:
                raise HoneError(
                    f"{result.cls} at {result.confidence:.0%} is below --min-confidence "
                    f"{min_confidence:.0%}: no profile applied"
                )
            applied = apply_profile(result)
        except HoneError as exc:
            if as_json:  # the analysis took its whole duration: a script still gets it
                print_json({**data, "applied": None, "not_applied": str(exc)})
            raise
        if not as_json:
            print_apply(applied)
        data["applied"] = apply_data(applied)
    if as_json:
        print_json(data)


def _print(result) -> None:  # type: ignore[no-untyped-def]
    others = ", ".join(
        f"{c} {p:.0%}" for c, p in list(result.probabilities.items())[1:4] if p >= 0.01
    )
    typer.echo(
        f"workload: {result.cls} ({result.confidence:.0%} confident"
        + (f"; then {others}" if others else "")
        + f") over {result.samples} samples"
    )
    counters = "with hardware counters" if result.hardware else "without hardware counters"
    if result.model == "default":
        counters += " (this machine counts them)" if result.hardware else " (this machine has none)"
    typer.echo(f"model: {result.model}, {counters}")
    if result.features:
        typer.echo("because (this sample vs. typical):")
        for name, value, typical in result.features:
            typer.echo(f"  {name:26s} {value:10.3g}  vs {typical:.3g}")
    if result.busiest:
        typer.echo(
            "busiest: " + ", ".join(f"{n}[{pid}] {cpu:.0f}%" for n, pid, cpu in result.busiest)
        )
    typer.echo(f"{'resource':12s} {'verdict':9s} {'utilisation':44s} {'saturation':50s} errors")
    for r in result.resources:
        typer.echo(
            f"{r.name:12s} {r.verdict:9s} {r.utilisation_text:44s} {r.saturation_text:50s} "
            f"{r.errors}"
        )
    b = result.bottleneck
    typer.echo(f"bottleneck: {b.name} ({b.saturation_text})" if b else "bottleneck: none saturated")
    typer.echo(f"profile: {result.profile or '-'}" + ("" if not result.profile else
               f"  (hone analyze --apply, or hone profile apply {result.profile})"))  # fmt: skip


def train_command(
    paths: list[Path] = typer.Argument(..., help="CSV files or folders (hone collect -o, A-Tune)"),
    name: str = typer.Option("custom", "--name", "-n", help="the model's name"),
    output: Path = typer.Option(None, "--output", "-o", help="model file (default: by name)"),
    interval: float = typer.Option(
        1.0,
        "--interval",
        "-i",
        help="seconds between the CSV rows (A-Tune's collector: 5)",
        parser=finite_float,
    ),
    builtin: bool = typer.Option(
        False, "--builtin/--no-builtin", help="also train on hone's own data (and A-Tune's)"
    ),
    profile: list[str] = typer.Option(
        [], "--profile", "-p", help="CLASS=PROFILE: the profile --apply uses for a class"
    ),
    hardware: bool = typer.Option(
        False, "--hardware", help="also use hardware counters (only runs that have them)"
    ),
    force: bool = typer.Option(False, "--force", help="replace an existing model file"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Train a workload classifier from labelled CSV files (workload.type / workload.appname)."""
    from hone import profiles as profiles_module
    from hone.analyze.dataset import builtin_runs, csv_files, load_runs, require_classes
    from hone.outfile import refuse_existing, refuse_stdout, require_folder

    refuse_stdout(output, "a model")
    if "/" in name or not name or name.startswith("."):
        raise HoneError(f"model name {name!r} must not be empty or contain '/'")
    if interval <= 0:  # 0 divided the window by zero; below 0 cut it to two rows
        raise HoneError("--interval must be above 0")
    mapping: dict[str, str] = {}
    for pair in profile:
        cls, sep, profile_name = pair.partition("=")
        if not sep or not cls or not profile_name:
            raise HoneError(f"--profile {pair!r}: expected CLASS=PROFILE")
        profiles_module.load(profile_name)  # a missing profile is an error now, not at --apply
        mapping[cls] = profile_name
    files = csv_files(paths)
    target = output or _models_dir() / f"{name}.pkl"
    if any(target.resolve() == f.resolve() for f in files):  # even --force: it is the data
        raise HoneError("is a training file: write the model elsewhere", file=target)
    refuse_existing(target, force)  # before the training, not after it
    if output is not None:  # hone's models folder is made when saving; the user's must exist
        require_folder(output)
    runs = [r for p in files for r in load_runs(p, interval)]
    if builtin:
        runs += builtin_runs()
    unknown = set(mapping) - {r.cls for r in runs}
    if unknown:
        raise HoneError(f"--profile names classes not in the data: {', '.join(sorted(unknown))}")
    require_classes(sorted({r.cls for r in runs}))
    from hone.analyze.model import fit, save  # scikit-learn: imported once the input is good

    model = fit(runs, mapping, hardware=hardware)
    save(model, target)
    if as_json:
        classes = [
            {"class": cls, "runs": model.runs.get(cls, 0), "profile": model.profiles.get(cls)}
            for cls in model.classes
        ]
        print_json({"model": str(target), "classes": classes})
        return
    for cls in model.classes:
        typer.echo(
            f"{cls:20s} {model.runs.get(cls, 0):3d} runs  profile {model.profiles.get(cls, '-')}"
        )
    again = command_line(["hone", "analyze", "--model", str(output or name)])
    typer.echo(f"saved {target}  ({again})")
