"""What a tuning run prints: a live Rich display, or A-Tune's exact console lines."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from hone.output import config_text, measured, output_console, same_rounds
from hone.tune.confirm import noise_text
from hone.tune.risk import risk_lines

if TYPE_CHECKING:
    from hone.project.model import Project
    from hone.tune.records import Measurement, TuneResult


class Reporter:
    """Events of a run. The base class keeps the running best; subclasses print."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.best_score: float | None = None
        self.best_metrics: dict[str, float] = {}
        self.gain: Callable[[float], float] = lambda score: 0.0
        self.current_phase = ""

    def start(self, project: Project, study: str, engine: str, budget: int) -> None: ...

    def phase(self, name: str, total: int) -> None:
        self.current_phase = name

    def baseline(
        self, metrics: Mapping[str, float], cv: float, runs: int, gain: Callable[[float], float]
    ) -> None:
        self.gain = gain

    def trial(self, done: int, total: int, run: Measurement) -> None:
        better = run.score is not None and (self.best_score is None or run.score > self.best_score)
        if self.current_phase == "search" and run.ok and better:
            self.best_score, self.best_metrics = run.score, dict(run.metrics)

    def note(self, message: str) -> None: ...

    def warn(self, message: str) -> None: ...

    def finish(self, result: TuneResult) -> None: ...

    def stop(self) -> None:
        """End any live display (a run that ends without a TuneResult: `hone worker`)."""


def _values(metrics: Mapping[str, float]) -> str:
    return ",".join(f"{name}={value:.2f}" for name, value in metrics.items())


def _params(config: Mapping[str, Any]) -> str:
    return ",".join(f"{name}={value}" for name, value in config.items())


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return (f"{hours}h" if hours else "") + (f"{minutes}m" if hours or minutes else "") + f"{secs}s"


class AtuneReporter(Reporter):
    """Exactly the lines A-Tune's client prints (spellings included), for tools that parse them."""

    def __init__(
        self, echo: Callable[[str], None] = print, tell: Callable[[str], None] | None = None
    ) -> None:
        super().__init__()
        self.echo = echo
        #: What A-Tune has no line for (a failure's reason, a warning, the outcome) goes to
        #: stderr, so that the lines tools parse stay exactly A-Tune's.
        self.tell = tell or (lambda line: print(line, file=sys.stderr))
        self.names: list[str] = []

    def start(self, project: Project, study: str, engine: str, budget: int) -> None:
        self.names = [m.name for m in project.metrics]

    def phase(self, name: str, total: int) -> None:
        super().phase(name, total)
        if name == "baseline":
            self.echo(" Start to benchmark baseline...")

    def trial(self, done: int, total: int, run: Measurement) -> None:
        super().trial(done, total, run)
        if self.current_phase != "search":
            return
        # A-Tune's used time runs from the start of the run, as its total does
        used = _duration(time.monotonic() - self.started)
        best = self.gain(self.best_score) if self.best_score is not None else 0.0
        self.echo(f" Current Tuning Progress......({done}/{total})")
        self.echo(
            f" Used time: {used}, Total Time: {used}, "
            f"Best Performance: ({self._values(self.best_metrics)}), "
            f"Performance Improvement Rate: {best:.2f}%"
        )
        self.echo(f" The {done}th recommand parameters is: {_params(run.config)}")
        if run.error:
            self.tell(f"hone: trial {done} failed: {run.error}")
        rate = f"{self.gain(run.score):.2f}" if run.score is not None else "NaN"
        self.echo(f" The {done}th evaluation value: ({self._values(run.metrics)})({rate}%)")

    def _values(self, metrics: Mapping[str, float]) -> str:
        """A-Tune has no failed iteration. NaN where nothing was measured keeps the lines'
        shape, (name=value,...)(rate%), which parsers take apart: empty parentheses break them."""
        return _values(metrics) if metrics else ",".join(f"{n}=NaN" for n in self.names)

    def finish(self, result: TuneResult) -> None:
        best = result.best or result.baseline
        metrics = result.best_metrics or result.baseline_metrics
        self.echo(f" The final optimization result is: {_params(best)}")
        self.echo(f" The final evaluation value is: {_values(metrics)}")
        self.echo("")
        self.echo(f" Baseline Performance is: ({_values(result.baseline_metrics)})")
        self.echo("")
        self.echo(" Tuning Finished")
        self.tell(f"hone: {result.outcome}: {result.reason}")

    def warn(self, message: str) -> None:
        self.tell(f"hone: warning: {message}")


class RichReporter(Reporter):
    """A live progress bar with trial n/N, elapsed time, best so far and improvement."""

    def __init__(self, console: Console | None = None, command: str = "hone tune") -> None:
        super().__init__()
        self.console = console or output_console()
        self.command = command
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[best]}", markup=False),  # metric names as given
            console=self.console,
            transient=True,
        )
        self.task: Any = None
        self.units: dict[str, str] = {}

    def start(self, project: Project, study: str, engine: str, budget: int) -> None:
        knobs = len(project.knobs)
        self.units = {m.name: m.unit for m in project.metrics}
        self.console.print(
            f"[bold]{self.command}[/] {escape(project.name)}: study [cyan]{escape(study)}[/], "
            f"{knobs} knobs, "
            f"engine {escape(engine)}, budget {budget}",
            markup=True,
        )
        self.progress.start()

    def phase(self, name: str, total: int) -> None:
        super().phase(name, total)
        if self.task is not None:
            self.progress.remove_task(self.task)
        self.task = self.progress.add_task(name, total=total, best=self._best_text())

    def baseline(
        self, metrics: Mapping[str, float], cv: float, runs: int, gain: Callable[[float], float]
    ) -> None:
        super().baseline(metrics, cv, runs, gain)
        self.console.print(
            f"baseline ({runs} run{'' if runs == 1 else 's'}): "
            f"{measured(metrics, self.units)}  {noise_text(cv, runs)}"
        )

    def trial(self, done: int, total: int, run: Measurement) -> None:
        super().trial(done, total, run)
        if run.error:
            outcome = f"[red]failed[/]: {escape(run.error)}"
        else:
            figures = escape(measured(run.metrics, self.units))
            outcome = f"{figures} ({self.gain(run.score or 0.0):+.1f} %)"
        label = {"search": f"trial {done}/{total}", "confirm": f"confirm round {done}/{total}"}
        prefix = label.get(self.current_phase, self.current_phase)
        self.console.print(
            f"{prefix}: {escape(config_text(run.config, ','))} -> {outcome}", markup=True
        )
        if self.task is not None:
            self.progress.update(self.task, advance=1, best=self._best_text())

    def _best_text(self) -> str:
        if self.best_score is None:
            return ""
        return (
            f"best {measured(self.best_metrics, self.units)} ({self.gain(self.best_score):+.1f} %)"
        )

    def note(self, message: str) -> None:
        self.console.print(Text(message, style="dim"))

    def warn(self, message: str) -> None:
        self.console.print(f"[yellow]warning:[/] {escape(message)}", markup=True)

    def stop(self) -> None:
        # a bar never started (a run refused before its study) prints nothing: rich's stop
        # writes a newline to a stdout that is not a terminal
        if self.progress.live.is_started:
            self.progress.stop()

    def finish(self, result: TuneResult) -> None:
        self.stop()
        self.console.print()
        if result.best is not None:
            self.console.print(f"best: {config_text(result.best, ',')}", markup=False)
            self.console.print(f"      {measured(result.best_metrics, self.units)}")
            if result.confirm_baseline_metrics:
                line = same_rounds(result.confirm_baseline_metrics, self.units)
                self.console.print(line, markup=False)
        self.console.print(f"baseline: {measured(result.baseline_metrics, self.units)}")
        if result.gain is not None:
            self.console.print(f"gain in confirmation: [bold]{result.gain}[/]", markup=True)
        for line in risk_lines(result.risk):
            self.console.print(line, markup=False)
        colour = "green" if result.outcome == "applied" else "yellow"
        self.console.print(f"[{colour}]{result.outcome}[/]: {escape(result.reason)}", markup=True)
        self.console.print(
            f"{result.trials} trials ({result.failures} failed) in {_duration(result.elapsed)}; "
            f"study {result.study}"
        )
