"""`hone diagnose`: find the bottleneck of a process or a command and say what to tune, or
what the whole machine is busy with (`--system`, module hone.diagnose.system).

    hone diagnose --system --duration 10
    hone diagnose --pid 1234 --duration 30
    hone diagnose --unit nginx --duration 30
    hone diagnose -- ./my-benchmark args
    hone diagnose -- systemctl restart nginx
    hone diagnose --compare before.hone after.hone
    hone diagnose --pid 1234 --suggest-project ./tune-it

The recording is module window's; reports go to hone's state directory under `diagnoses/`.
`hone diagnose`, `hone diagnoses` and `hone --help` import this module to register them, so the
recorders, the report and the project writer are imported when a command runs, not here."""

from __future__ import annotations

import contextlib
import re
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from hone.cli.values import finite_float
from hone.diagnose.descendants import thread_group
from hone.diagnose.machine import describe as _describe
from hone.diagnose.scratch import OWNER, read_owner, sweep, write_owner
from hone.diagnose.unit import find, started, unit_name
from hone.errors import HoneError, Stop
from hone.outfile import refuse_existing, refuse_stdout, require_folder
from hone.paths import state_dir
from hone.shell import command_line

if TYPE_CHECKING:
    from hone.diagnose.report import Diagnosis


def _places(output: Path | None, target: str, recording: bool = False) -> tuple[Path, Path]:
    """(report.html, diagnosis.hone): `-o x.html` names the report, `-o DIR` the folder. A
    folder of hone's own for a `recording` names its owner until the diagnosis is saved: `hone
    diagnoses` tells one still being recorded from one whose hone was killed (module saved)."""
    refuse_stdout(output, "a diagnosis (a report, its .hone file, flame graphs)")
    if output and output.suffix == ".html":
        require_folder(output)
        return output, output.with_suffix(".hone")
    if output is not None:  # the user's report folder is made, in a folder that exists
        require_folder(output)
    else:
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", target)[:40].strip("-")
        output = state_dir() / "diagnoses" / f"{time.strftime('%Y%m%d-%H%M%S')}-{slug}"
        output.parent.mkdir(parents=True, exist_ok=True)  # hone's own
        if recording:
            output.mkdir(exist_ok=True)
            write_owner(output, target=target, created=time.time())
    try:
        output.mkdir(exist_ok=True)
    except FileExistsError:  # a file of that name: not a folder to write into
        raise HoneError("exists and is not a folder: name a folder or a .html path",
                        file=output) from None  # fmt: skip
    return output / "report.html", output / "diagnosis.hone"


def diagnose(
    command: list[str] = typer.Argument(
        None,
        help="a command to run and diagnose (after --); `systemctl start|restart UNIT...`: the "
        "units it starts",
    ),
    pid: int = typer.Option(
        None, "--pid", "-p", help="diagnose this running process and its descendants"
    ),
    unit: str = typer.Option(
        None,
        "--unit",
        "-u",
        help="diagnose a systemd service (NAME or NAME.service): every process of its cgroup",
    ),
    system: bool = typer.Option(
        False, "--system", "-a", help="the whole machine: which processes take the CPUs"
    ),
    duration: float = typer.Option(
        None,
        "--duration",
        "-d",
        help="seconds (default 30 for --pid, --unit and `systemctl start UNIT`, 10 for --system; "
        "another command: until it exits)",
        parser=finite_float,
    ),
    output: Path = typer.Option(None, "--output", "-o", help="report folder, or a .html path"),
    force: bool = typer.Option(
        False, "--force", help="replace an earlier diagnosis saved at --output"
    ),
    compare: tuple[Path, Path] | None = typer.Option(
        None, "--compare", help="two saved diagnoses (.hone files or report folders)"
    ),
    suggest_project: Path = typer.Option(
        None, "--suggest-project", help="also write a `hone tune` project with the knobs here"
    ),
    load: Path = typer.Option(None, "--from", help="a saved diagnosis instead of a new run"),
    frequency: int = typer.Option(99, "--frequency", "-F", help="on-CPU samples per second"),
    with_offcpu: bool = typer.Option(True, "--offcpu/--no-offcpu", help="off-CPU analysis"),
    with_locks: bool = typer.Option(True, "--locks/--no-locks", help="lock-wait analysis"),
    as_json: bool = typer.Option(
        False, "--json", help="print the diagnosis as JSON (the shape of GET /api/diagnoses/NAME)"
    ),
) -> None:
    """Find the bottleneck (hot threads, flame graphs, off-CPU, locks, top-down), what to tune."""
    if compare:
        _compare(compare[0], compare[1], output, as_json)
        return
    sources = sum(x is not None and x != [] for x in (pid, unit, command or None, load)) + system
    if sources != 1:
        raise HoneError(
            "give one of --pid PID, --system, --unit NAME, --from FILE.hone, or -- COMMAND ARGS"
        )
    if duration is not None and duration <= 0:
        raise HoneError(f"--duration must be positive, got {duration:g}")
    if frequency <= 0:  # checked before a command starts, not when perf is about to attach
        raise HoneError(f"--frequency must be positive, got {frequency}")
    if pid is not None and not Path(f"/proc/{pid}").exists():
        raise HoneError(f"no process with pid {pid}")
    if pid is not None and thread_group(pid) not in (0, pid):
        # a thread's id (top -H): its process is what perf records and whose children count
        typer.echo(f"hone: {pid} is a thread of pid {thread_group(pid)}: diagnosing pid "
                   f"{thread_group(pid)}", err=True)  # fmt: skip
        pid = thread_group(pid)
    service = find([unit_name(unit)]) if unit is not None else None
    followed = started(command) if command else []  # `systemctl start UNIT`: the unit's window
    # the recorders and the report after the checks: a mistyped option is told at once
    from hone.diagnose import system as whole_system
    from hone.diagnose.page import to_html
    from hone.diagnose.report import Diagnosis, terminal
    from hone.diagnose.window import collect, collect_unit, follow_service, run_command

    options = {"frequency": frequency, "want_offcpu": with_offcpu, "want_locks": with_locks}
    if load is not None:
        result = Diagnosis.load(_saved(load))
        report = _places(output, result.target)[0] if output is not None else None
        if report:
            report.write_text(to_html(result))
        _say(result, terminal(result, report), as_json, report=report)
    else:
        if service is not None:
            target = f"unit {service.name}"
        else:
            target = _describe(pid) if pid is not None else command_line(command or [])
        report, saved = _places(output, "system" if system else target, recording=True)
        sweep()  # what killed runs left in the temporary directory (`--system` makes none)
        # an earlier run's measurement cannot be taken again (its report can be redrawn)
        refuse_existing(saved, force)
        files = _side_folder(report)
        try:
            with stop_unwinds():
                if system:
                    result = whole_system.collect(duration or 10.0, frequency=frequency,
                                                  keep=files)  # fmt: skip
                elif pid is not None:
                    result = collect(pid, duration or 30.0, keep=files,
                                     **options)  # type: ignore[arg-type]  # fmt: skip
                elif service is not None:
                    result = collect_unit(service, duration or 30.0, keep=files, **options)
                elif followed:
                    result = follow_service(list(command), followed, duration or 30.0,
                                            to_stderr=as_json, keep=files, **options)  # fmt: skip
                else:
                    result = run_command(list(command), duration, to_stderr=as_json, keep=files,
                                         **options)  # type: ignore[arg-type]  # fmt: skip
        except BaseException:
            if output is None:  # the folder hone named for this run: no report will be in it
                shutil.rmtree(report.parent, ignore_errors=True)
            raise
        try:
            result.save(saved)
            report.write_text(to_html(result))
            _write_side_files(result, files)
        except BaseException as error:  # the recording stays, and `hone diagnoses` says why
            if output is None:
                said = {**(read_owner(report.parent) or {}), "error": str(error) or repr(error)}
                with contextlib.suppress(OSError):  # a full disk may refuse this too
                    write_owner(report.parent, **said)
            raise
        if output is None:
            (report.parent / OWNER).unlink(missing_ok=True)
        _say(result, terminal(result, report, saved), as_json, report=report, saved=saved)
    if suggest_project is not None:
        from hone.diagnose import suggest  # hone.project (numpy): 1 s only a project pays

        path = suggest.write(result, suggest_project)
        check = command_line(["hone", "check", str(path.parent)])
        typer.echo(f"project: {path} (check it with: {check})", err=as_json)


#: The signals that end a diagnosis as Ctrl-C does, with their exit codes (128 + the signal).
STOPS = {signal.SIGTERM: 143, signal.SIGHUP: 129}


@contextlib.contextmanager
def stop_unwinds() -> Iterator[None]:
    """SIGTERM (kill, timeout, a service manager, a cancelled CI job) and SIGHUP (the terminal
    or the ssh session gone) end a diagnosis as Ctrl-C does: an exception that unwinds through
    the window's clean-up, which stops every recorder and the diagnosed command and removes
    the temporary and the report folders. Python's default for both ended hone at once: its
    recorders, each perf in a session of its own, went on for the whole window (forever for
    `--system -d 1e300`: a `perf record -a` orphaned to init), the temporary folder stayed.
    A signal hone was started with ignored (nohup) stays ignored. Only the main thread may set
    a handler: called on another, this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        stopped = Stop(f"stopped by {signal.Signals(signum).name}")
        stopped.exit_code = STOPS[signal.Signals(signum)]
        raise stopped

    previous = {sig: signal.getsignal(sig) for sig in STOPS}
    for sig, handler in previous.items():
        if handler == signal.SIG_DFL:
            signal.signal(sig, stop)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            if handler is not None:
                signal.signal(sig, handler)


def _say(result: Diagnosis, text: str, as_json: bool, **files: Path | None) -> None:
    """The verdict in words, or with --json the whole diagnosis and where its files are."""
    if not as_json:
        typer.echo(text)
        return
    from hone.diagnose.document import document
    from hone.output import print_json

    print_json({**document(result), "files": {k: str(v) for k, v in files.items() if v}})


def _side_folder(report: Path) -> Path:
    """Where perf.data and the exports go: the report's folder, or NAME_files beside NAME.html."""
    folder = (
        report.parent if report.name == "report.html" else report.with_name(report.stem + "_files")
    )
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _write_side_files(d: Diagnosis, folder: Path) -> None:
    """Folded stacks, standalone flame graphs, speedscope and pprof files of the diagnosis."""
    from hone.diagnose.flamegraph import modules_of, render
    from hone.diagnose.fold import format_folded
    from hone.diagnose.pprof import to_pprof
    from hone.diagnose.speedscope import speedscope_json

    oncpu = d.profile.folded()
    (folder / "oncpu.folded").write_text(format_folded(oncpu))
    title = f"On-CPU: {d.target}"
    (folder / "oncpu.svg").write_text(render(oncpu, title=title, modules=modules_of(d.profile)))
    (folder / "oncpu.speedscope.json").write_text(speedscope_json(d.profile, d.target))
    (folder / "oncpu.pb.gz").write_bytes(to_pprof(d.profile))
    if d.offcpu:
        offcpu_folded = d.offcpu.folded()
        (folder / "offcpu.folded").write_text(format_folded(offcpu_folded))
        title = f"Off-CPU (microseconds): {d.target}"
        svg = render(offcpu_folded, title=title, unit="us", modules=d.offcpu.modules)
        (folder / "offcpu.svg").write_text(svg)


def _saved(path: Path) -> Path:
    """A .hone file, or a report folder holding diagnosis.hone."""
    return path / "diagnosis.hone" if path.is_dir() else path


def _compare(before: Path, after: Path, output: Path | None, as_json: bool) -> None:
    from hone.diagnose.comparison import compare_data, compare_html, compare_text
    from hone.diagnose.report import Diagnosis
    from hone.output import print_json

    a, b = Diagnosis.load(_saved(before)), Diagnosis.load(_saved(after))
    report, _ = _places(output, f"compare-{before.stem}-{after.stem}")
    report.write_text(compare_html(a, b))
    if as_json:
        print_json({**compare_data(a, b), "report": str(report)})
        return
    typer.echo(compare_text(a, b))
    typer.echo(f"report: {report}")


def diagnoses(
    as_json: bool = typer.Option(
        False, "--json", help="machine-readable output (the shape of GET /api/diagnoses)"
    ),
) -> None:
    """List the saved diagnoses, newest first, with their target and verdict."""
    from hone.diagnose.saved import folder, listed, table
    from hone.output import output_console, print_json

    items = listed()
    if as_json:
        print_json(items)
        return
    if not items:
        typer.echo(f"no saved diagnoses in {folder()}")
        return
    output_console().print(table(items))
    typer.echo(f"each in {folder()}/NAME: its report.html; `hone diagnose --from` that folder")


def register(app: typer.Typer) -> None:
    app.command(name="diagnose")(diagnose)
    app.command(name="diagnoses")(diagnoses)
