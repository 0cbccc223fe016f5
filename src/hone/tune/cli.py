"""`hone tune`, `restore`, `studies`, `show`, `check`, `convert`, `report`."""

from __future__ import annotations

import glob
import sys
from pathlib import Path

import typer
from rich.markup import escape

from hone.cli.values import finite_float
from hone.errors import HoneError
from hone.output import config_text, one_line_text, output_console, print_json


def register(app: typer.Typer) -> None:
    app.command("tune")(tune)
    app.command("worker")(worker)
    app.command("restore")(restore)
    app.command("studies")(studies)
    app.command("show")(show)
    app.command("check")(check)
    app.command("convert")(convert)
    app.command("report")(report)


#: The ranges hone.yaml's `tuning:` allows: 0 would silently mean the project's default,
#: a negative budget no search at all, a negative seed a traceback from NumPy.
BUDGET = {"min": 1, "max": 10**9}
BASELINE = {"min": 1, "max": 1000}
SEED = {"min": 0, "max": 2**32 - 1}


def tune(
    project: str = typer.Argument(None, help="project folder or hone YAML file"),
    server: Path = typer.Option(None, help="A-Tune server YAML (knobs)"),
    client: Path = typer.Option(None, help="A-Tune client YAML (benchmark and goal)"),
    engine: str = typer.Option(None, help="optimiser: auto (default) or an A-Tune engine name"),
    budget: int = typer.Option(None, help="search trials (A-Tune: iterations)", **BUDGET),
    baseline: int = typer.Option(None, help="baseline runs (default 3)", **BASELINE),
    resume: bool = typer.Option(False, help="continue the project's unfinished study"),
    apply: str = typer.Option(None, help="auto: apply only a confirmed gain; always; never"),
    seed: int = typer.Option(None, help="random seed of the optimiser", **SEED),
    storage: str = typer.Option(None, help="SQLAlchemy URL of the study database"),
    atune_output: bool = typer.Option(False, "--atune-output", help="print A-Tune's lines"),
    allow_risk: bool = typer.Option(
        None,
        "--allow-risk/--no-allow-risk",
        help="may apply a winner with risky values (fsync=off, ...); default: no",
    ),
    min_detectable: str = typer.Option(
        None, help="smallest gain the confirmation must see, e.g. 3%: rounds raised or stop"
    ),
    max_repeats: int = typer.Option(
        None, help="most confirmation rounds (close calls, 3%); default 10"
    ),
    why: bool = typer.Option(
        None, "--why/--no-why", help="profile baseline and winner (default: when perf works)"
    ),
) -> None:
    """Search the knobs against the benchmark, confirm the winner, apply it safely."""
    from hone.project import load_project
    from hone.tune.console import AtuneReporter, RichReporter
    from hone.tune.records import TuneOptions
    from hone.tune.runner import Tuner

    if max_repeats is not None and max_repeats < 2:
        raise HoneError(f"--max-repeats must be at least 2, not {max_repeats}")
    if apply not in (None, "auto", "always", "never"):
        raise HoneError(f"--apply must be auto, always or never, not {apply!r}")
    loaded = load_project(project, server=server, client=client)
    if engine:
        from hone.optimizers import make_optimizer

        make_optimizer(engine, loaded.space())  # an unknown engine fails before any change
    reporter = AtuneReporter() if atune_output else RichReporter()
    options = TuneOptions(
        engine,
        budget,
        baseline,
        resume,
        apply,
        seed,
        storage,
        allow_risk,
        _percent(min_detectable),
        max_repeats,
        why,
    )
    result = Tuner(loaded, reporter, options).run()
    reporter.finish(result)


def _percent(text: str | None) -> float | None:
    """`3%` or `3` -> 3.0; anything else is one clear line."""
    if text is None:
        return None
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        value = float("nan")
    if not 0 < value < 1000:
        raise HoneError(f"--min-detectable must be a gain in percent such as 3%, not {text!r}")
    return value


def worker(
    project: str = typer.Argument(..., help="project folder or hone YAML file"),
    storage: str = typer.Option(..., help="SQLAlchemy URL of the shared study database"),
    worker_id: str = typer.Option(None, "--worker-id", help="this worker's name (hostname)"),
    study: str = typer.Option(None, help="study to join (default: the project's running one)"),
    engine: str = typer.Option(None, help="optimiser, when this worker creates the study"),
    budget: int = typer.Option(None, help="search trials of the study, when creating it", **BUDGET),
    baseline: int = typer.Option(
        None, help="baseline runs on every machine (default 3), when creating it", **BASELINE
    ),
    seed: int = typer.Option(None, help="random seed of the study, when creating it", **SEED),
    lease: float = typer.Option(
        60.0, help="seconds without a heartbeat before a trial is lost", parser=finite_float
    ),
    apply: str = typer.Option(
        None, help="auto|always|never: the study's winner policy, when this worker creates it"
    ),
    db_wait: float = typer.Option(
        300.0,
        "--db-wait",
        help="seconds to wait for a database that stops answering, then stop",
        parser=finite_float,
    ),
) -> None:
    """Run trials of a study shared by several machines (docs/scale.md)."""
    from hone.project import load_project
    from hone.storage.outage import MAX_WAIT, WAIT_RANGE
    from hone.tune.console import RichReporter
    from hone.tune.worker import LEASE_RANGE, MAX_LEASE, MIN_LEASE, Worker, WorkerOptions

    if not MIN_LEASE <= lease <= MAX_LEASE:
        raise HoneError(LEASE_RANGE.format(lease=lease))
    if not 0 <= db_wait <= MAX_WAIT:
        raise HoneError(WAIT_RANGE.format(wait=db_wait))
    loaded = load_project(project)
    if engine:
        from hone.optimizers import make_optimizer

        make_optimizer(engine, loaded.space())  # an unknown engine fails before any change
    if apply not in (None, "auto", "always", "never"):
        raise HoneError(f"--apply must be auto, always or never, not {apply!r}")
    options = WorkerOptions(
        storage, worker_id, study, engine, budget, baseline, seed, lease, apply, db_wait
    )
    reporter = RichReporter(command="hone worker")
    try:
        result = Worker(loaded, reporter, options).run()
    finally:
        reporter.stop()
    console = output_console()
    if result.best is not None and result.best_gain is not None:
        best = config_text(result.best)
        console.print(f"best of the study: {best} ({result.best_gain:+.1f} %)", markup=False)
    where = "winner applied here" if result.outcome == "applied" else "knobs put back"
    if result.reason and "put back" in result.reason:  # it says so itself: not twice
        where = result.reason
    elif result.reason:
        where += f" ({result.reason})"
    console.print(
        f"worker {result.worker}: {result.trials} trials ({result.failures} failed) in "
        f"{result.elapsed:.0f} s; study {result.study} {result.study_state}; {where}"
    )


def restore(
    project: str = typer.Argument(..., help="project name (or its folder)"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Put every knob a tuning run changed back to the value it had before (on every host of
    a cluster project)."""
    from hone import children
    from hone.cluster.restore import has_changes, restore_project

    name = _project_name(project)
    # what a killed run left running (a set command, a server it launched) goes first
    stopped = children.stop_orphans()
    # a killed run that recorded no originals (its knobs die with the process) is closed too,
    # else every later run warns that it never finished
    outcomes = restore_project(name) if has_changes(name) else []
    failed = [o for o in outcomes if not o.outcome.ok]
    if as_json:
        print_json(
            {
                "project": name,
                "stopped": stopped,
                "knobs": [
                    {
                        "host": item.host or None,
                        "knob": item.outcome.name,
                        "value": item.outcome.value,
                        "ok": item.outcome.ok,
                        "error": item.outcome.error,
                        "changed": item.outcome.changed,
                        "kept": item.outcome.kept,
                    }
                    for item in outcomes
                ],
            }
        )
    else:
        console = output_console()
        for command in stopped:
            console.print(f"stopped, left by a killed run: {one_line_text(command)}")
        if not outcomes:
            console.print(f"nothing to restore for {name}: no recorded changes{_never(name)}")
        for item in outcomes:
            outcome = item.outcome
            where = f"{item.host}: " if item.host else ""
            status = "ok" if outcome.ok else f"[red]failed[/]: {escape(str(outcome.error))}"
            if outcome.changed:
                status += f" (overwrote a change: {escape(outcome.changed)})"
            if outcome.kept:
                status += f" ({escape(outcome.kept)})"
            console.print(
                f"{escape(where)}{escape(outcome.name)} = {escape(repr(outcome.value))}  {status}",
                markup=True,
            )
        if outcomes and not failed:  # a workload's line is not a knob's
            knobs = sum(not item.outcome.workload for item in outcomes)
            console.print(f"restored {knobs} knob(s) of {name}")
    if failed:
        raise HoneError(f"{len(failed)} knob(s) could not be restored; journal kept")


JSON = typer.Option(False, "--json", help="machine-readable output (docs/serve.md's shapes)")


def _never(name: str) -> str:
    """For a name no run of this machine has ever journaled (a typo: `memcahced`): said, so
    that `nothing to restore` is not taken for the all-clear of the project meant."""
    from hone.journal import Journal

    path = Journal.for_project(name).path
    if path.parent.is_dir() and any(path.parent.glob(f"{glob.escape(path.stem)}*")):
        return ""
    return " (no run of a project of that name here: `hone studies` lists them)"


def _project_name(project: str) -> str:
    """A project name, or the name inside a project folder or file. The way back must not
    hang on the project file: one edited since into a project that no longer loads still
    names its journal (its name read alone), and a word that names a project with changes to
    put back is that project, whatever folder of that name the working folder holds."""
    if not Path(project).exists():
        return project
    from hone.cluster.restore import has_changes
    from hone.project import load_project
    from hone.project.load import declared_name

    try:
        return load_project(project).name
    except HoneError as exc:
        name = declared_name(project)
        if name is None and has_changes(project):
            name = project
        if name is None:
            raise
        print(f"hone: warning: {exc} (restoring project {name})", file=sys.stderr)
        return name


def require_existing(storage: str | None) -> None:
    """A --storage naming no database is refused before anything is read; the store's module
    (SQLAlchemy and Optuna, a quarter of a second) is imported only when a command runs."""
    from hone.storage.store import require_existing as check

    check(storage)


def studies(storage: str = typer.Option(None, help="SQLAlchemy URL"), as_json: bool = JSON) -> None:
    """List the tuning studies with their state and gain."""
    require_existing(storage)
    if as_json:
        from hone.storage import StudyStore
        from hone.storage.summary import summaries

        print_json(summaries(StudyStore(storage)))
        return
    from hone.storage import StudyStore
    from hone.tune.views import studies_table

    store = StudyStore(storage)
    table = studies_table(store)
    if table.row_count:
        output_console().print(table)
    else:  # as `hone diagnoses` says it: an empty table reads as a broken one
        typer.echo(f"no studies in {store.shown}")


def show(
    study: str = typer.Argument(..., help="study name (project#n) or project name"),
    storage: str = typer.Option(None, help="SQLAlchemy URL"),
    as_json: bool = JSON,
) -> None:
    """Trial table, best, baseline, failures with reasons, knob importance and effects."""
    require_existing(storage)
    if as_json:
        from hone.storage import StudyStore
        from hone.storage.summary import best_of, detail, read_trials, trial_dict
        from hone.tune.views import viewed_insight

        store = StudyStore(storage)
        record = store.find(study)
        trials = read_trials(store, record)
        print_json(
            {
                "study": detail(store, record),
                "best": best_of(record, trials),
                "trials": [trial_dict(t) for t in trials],
                "knobs": viewed_insight(store, record, trials),
            }
        )
        return
    from hone.tune.views import show_study

    show_study(output_console(), study, storage)


def check(
    project: str = typer.Argument(None, help="project folder, hone YAML or one A-Tune YAML"),
    server: Path = typer.Option(None),
    client: Path = typer.Option(None),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Load a project (or one A-Tune file) and print its knobs, types, ranges and goal."""
    from hone.tune.check import check_project

    check_project(output_console(), project, server, client, as_json)


def convert(
    project: str = typer.Argument(None, help="A-Tune project folder"),
    server: Path = typer.Option(None),
    client: Path = typer.Option(None),
    output: Path = typer.Option(None, "-o", "--output", help="write here (default: stdout)"),
    force: bool = typer.Option(False, "--force", help="replace an existing --output file"),
) -> None:
    """Turn an A-Tune server/client pair into hone's single-file format."""
    from hone.outfile import is_stdout, refuse_existing, require_folder, write_atomic
    from hone.project.convert import to_hone_yaml
    from hone.project.load import load_atune_folder

    if is_stdout(output):
        output = None
    loaded = load_atune_folder(project, server=server, client=client)
    if output and any(output.resolve() == source.resolve() for source in loaded.sources):
        # writing over the A-Tune file being converted would lose it
        raise HoneError("is a file being converted: write the hone YAML elsewhere", file=output)
    if output:  # a converted project is edited afterwards: a second convert must not undo that
        refuse_existing(output, force)
        require_folder(output)
    text = to_hone_yaml(loaded, output)
    if output:
        write_atomic(output, text.encode())
    else:
        typer.echo(text, nl=False)


def report(
    study: str = typer.Argument(..., help="study name (project#n) or project name"),
    output: Path = typer.Option(None, "-o", "--output", help="HTML file to write (- for stdout)"),
    storage: str = typer.Option(None, help="SQLAlchemy URL"),
    force: bool = typer.Option(False, "--force", help="replace an existing file of -o"),
) -> None:
    """Write one self-contained HTML report of a study."""
    require_existing(storage)
    from hone.outfile import is_stdout, refuse_existing, require_folder
    from hone.report.study import is_report, report_html, write_report

    if is_stdout(output):
        typer.echo(report_html(study, storage), nl=False)
        return
    if output is not None:
        # a report written before is replaced (the report of a study that went on); another
        # file (`-o hone.yaml`, a slip of the tab key) only with --force
        refuse_existing(output, force or is_report(output))
        require_folder(output)

    path = write_report(study, output, storage)
    typer.echo(str(path))
