"""One tuning run started by the server, in its own process: `python -m hone.serve.worker`.

A process of its own, because a run changes its environment and working state, and SIGINT
stops it the way Ctrl-C stops `hone tune`: every knob is put back before it exits. Progress
goes to stdout as JSON lines, one per reporter event, for the server to relay."""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from hone.errors import HoneError, Stop
from hone.tune.console import Reporter

if TYPE_CHECKING:
    from hone.project.model import Project
    from hone.tune.records import Measurement, TuneResult


class JsonReporter(Reporter):
    """Reporter events as JSON lines: what the web UI shows live while a study runs."""

    def __init__(self, emit: Callable[[dict[str, Any]], None]) -> None:
        super().__init__()
        self.emit = emit

    def _send(self, kind: str, **data: Any) -> None:
        self.emit({"event": kind, "time": time.time(), **data})

    def start(self, project: Project, study: str, engine: str, budget: int) -> None:
        self._send("start", project=project.name, study=study, engine=engine, budget=budget)

    def phase(self, name: str, total: int) -> None:
        super().phase(name, total)
        self._send("phase", phase=name, total=total)

    def baseline(
        self, metrics: Mapping[str, float], cv: float, runs: int, gain: Callable[[float], float]
    ) -> None:
        super().baseline(metrics, cv, runs, gain)
        self._send("baseline", metrics=dict(metrics), cv=cv, runs=runs)

    def trial(self, done: int, total: int, run: Measurement) -> None:
        super().trial(done, total, run)
        best = self.gain(self.best_score) if self.best_score is not None else None
        self._send(
            "trial",
            phase=self.current_phase,
            done=done,
            total=total,
            config=run.config,
            metrics={k: v for k, v in run.metrics.items() if not k.startswith("_")},
            score=run.score,
            error=run.error,
            best_gain=best,
        )

    def note(self, message: str) -> None:
        self._send("note", message=message)

    def warn(self, message: str) -> None:
        self._send("warning", message=message)

    def finish(self, result: TuneResult) -> None:
        gain = None if result.gain is None else result.gain.mean
        self._send("finish", outcome=result.outcome, reason=result.reason, gain=gain)


def _emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event, default=str) + "\n")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hone.serve.worker")
    parser.add_argument("project")
    parser.add_argument("--engine")
    parser.add_argument("--budget", type=int)
    parser.add_argument("--baseline", type=int)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--apply", choices=["auto", "always", "never"])
    parser.add_argument("--storage")
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args(argv)

    from hone.project import load_project
    from hone.tune.records import TuneOptions
    from hone.tune.runner import Tuner

    reporter = JsonReporter(_emit)
    try:
        project = load_project(args.project)
        options = TuneOptions(
            args.engine,
            args.budget,
            args.baseline,
            args.resume,
            args.apply,
            args.seed,
            args.storage,
        )
        result = Tuner(project, reporter, options).run()
    except HoneError as exc:
        _emit({"event": "error", "time": time.time(), "message": str(exc)})
        return exc.exit_code
    except KeyboardInterrupt:  # stop(): the Tuner has put every knob back
        _emit({"event": "stopped", "time": time.time()})
        return 130
    except Stop as exc:  # SIGTERM: the Tuner has put the knobs back (or says it could not)
        _emit({"event": "stopped", "time": time.time(), "message": str(exc)})
        return exc.exit_code
    reporter.finish(result)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        # As the `hone` command does: nothing is left to collect, and the interpreter's
        # collections at exit over Optuna's, SQLAlchemy's and SciPy's heap delayed the exit
        # that the server's Stop waits for. Finalizers and atexit still run.
        gc.freeze()
