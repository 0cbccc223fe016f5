"""The system under tuning, as a study sees it: its knobs as set now, its workload's restarts,
one benchmark run, and the way back to where it was.

A study (runner.Tuner, worker.Worker) decides what to measure; this decides nothing: it sets
what it is given, only the knobs whose value is not known to be set already, and keeps what
it started and changed so that the end of a study, however it ends, can put everything back."""

from __future__ import annotations

import os
import re
import socket
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from hone import children, shell
from hone.cluster.metrics import HostMetrics
from hone.cluster.project import cluster_of, remote_benchmark
from hone.cluster.restore import SERVICE, SERVICE_OUTCOME, restore_project
from hone.errors import ActuationError, BenchmarkError, HoneError
from hone.journal import Journal
from hone.knobs.shell import ShellActuator
from hone.output import one_line_text
from hone.paths import work_dir
from hone.project.model import Project
from hone.space import Config, Value
from hone.tune.console import Reporter
from hone.tune.metrics import extract
from hone.workload.manager import WorkloadManager, service, service_spec

#: What every command of a run sees besides the machine's environment (docs/project-format.md).
_COMMAND_VARIABLES = ("HONE_PORT", "HONE_WORKDIR", "HONE_PROJECT_DIR")


def _command_variables() -> dict[str, str]:
    """hone's own variables as this run set them (prepare), for commands run elsewhere or
    later: a shell knob's journaled set, the service a `restore` restarts."""
    return {k: os.environ[k] for k in _COMMAND_VARIABLES if k in os.environ}


class RestoreFailed(HoneError):
    """`System.restore` left knobs changed; `causes` names each, with its host and reason."""

    def __init__(self, message: str, causes: str) -> None:
        super().__init__(message)
        self.causes = causes


class System:
    def __init__(self, project: Project, journal: Journal, reporter: Reporter) -> None:
        self.project = project
        self.journal = journal
        self.reporter = reporter
        self.workdir = work_dir(project.name)
        self.workload = WorkloadManager(project.workload, project.directory, self.workdir)
        self.cluster = cluster_of(project)
        self.host_metrics = HostMetrics(project)
        #: The value each knob is known to hold (None: being set, unknown until verified).
        self.applied: dict[str, Value | None] = {}
        self.restarted = False
        #: A start of the workload was tried: it may run even if it never became ready.
        self.start_tried = False
        #: The workload restarted since the last reading began.
        self.fresh = False
        #: Workload (re)starts by stage of the study (baseline, search, confirm, why, end).
        self.restarts: dict[str, int] = {}
        self.stage = "baseline"
        #: The trial being measured: every command sees it as ITERATION (as in A-Tune).
        self.iteration = 0
        #: The configuration before tuning (read_baseline): on hosts, each one's originals.
        self.baseline: Config = {}
        #: Why the last `put_back` could not put every knob back.
        self.restore_error: HoneError | None = None

    def count_trial(self) -> None:
        """The next trial's number, set for every command it runs."""
        self.iteration += 1
        os.environ["ITERATION"] = str(self.iteration)

    # -- before the first change -----------------------------------------------------------

    def prepare(self) -> None:
        """Variables every command sees: a free port, a private work directory, the project.
        First, what a killed run left running: a server it launched would go on holding its
        port with a trial's flags, and answer in place of the one this run starts."""
        for command in children.stop_orphans():
            self.reporter.warn(f"stopped, left by a killed run: {one_line_text(command)}")
        self._stop_left_service()
        self.workdir.mkdir(parents=True, exist_ok=True)
        os.environ.setdefault("HONE_PORT", str(_free_port()))
        os.environ["HONE_WORKDIR"] = str(self.workdir)
        os.environ["HONE_PROJECT_DIR"] = str(self.project.directory)
        variables = _command_variables()
        for knob in self.project.knobs:
            if isinstance(knob.actuator, ShellActuator):
                # Kept in the journal with the commands, so `hone restore` in another process
                # runs them with the same work directory and port.
                knob.actuator.env.update(variables)
        setup = self.project.workload.setup
        if setup:
            result = shell.run(
                setup, timeout=self.project.workload.ready_timeout * 10, cwd=self.project.directory
            )
            if not result.ok:
                raise HoneError(f"workload setup failed: {result.tail()}", key="setup")
        unfinished = self.journal.unfinished()
        if unfinished:
            self.reporter.warn(
                f"a previous run (pid {unfinished.get('pid')}) did not finish; the original "
                f"values it recorded are kept. `hone restore {self.project.name}` puts them back."
            )

    def _stop_left_service(self) -> None:
        """A service a killed run started for itself (not `keep_running`) goes on with that
        run's port and values; this run starts its own on a port of its own, and would leave
        that one running for good. Stopped here, with the killed run's commands and
        variables, as `restore` would (a service kept running is restarted by this run)."""
        record = self.journal.workloads().get(SERVICE)
        if not self.journal.unfinished() or not record or record["running"]:
            return
        if not record.get("restarted"):
            return
        try:
            service(record["spec"]).stop()
        except HoneError as exc:
            self.reporter.warn(f"could not stop the workload a killed run left: {exc}")
        else:
            self.reporter.warn("stopped the workload a killed run had started")

    def read_baseline(self) -> Config:
        """The configuration before tuning: journaled originals, else what the system shows."""
        on_hosts = self.cluster.baseline() if self.cluster else {}
        for knob in self.project.knobs:
            if knob.group is None:
                try:  # stops here, before anything changed
                    knob.actuator.check_writable()
                except ActuationError as exc:
                    raise knob.located(exc) from None
        config: Config = {}
        for knob in self.project.knobs:
            original = None if knob.group else self.journal.original_of(knob.name, knob.actuator)
            if knob.name in on_hosts:
                text = on_hosts[knob.name]
            elif original is not None:
                text = original.value
            elif knob.actuator.readable:
                try:  # a failing get stops here: nothing changed yet
                    text = knob.actuator.get()
                    knob.actuator.check_value(text)  # and so does a value it could never write back
                except ActuationError as exc:
                    raise knob.located(exc) from None
            elif knob.reference is not None:
                config[knob.name] = knob.reference
                continue
            else:  # stops here, before anything changed: there would be no value to go back to
                raise HoneError(
                    f"knob {knob.name}: its current value cannot be read; give it a default"
                )
            try:
                config[knob.name] = knob.domain.parse(text)
            except ValueError:
                config[knob.name] = text
            if original is None and knob.group is None:
                self.applied[knob.name] = config[knob.name]
        self.baseline = dict(config)
        return config

    # -- changing and measuring ------------------------------------------------------------

    def apply(self, config: Mapping[str, Value], *, serve: bool = True) -> None:
        """Set the knobs whose value differs from what is known to be set; restart if needed.
        `serve` False: the workload here is not (re)started for them (at a study's end, when
        hone stops the workload it owns right after: a restart and warm-up would be lost)."""
        self.journal.require_on_disk()
        restart = False
        remote: dict[str, Value] = {}
        for knob in self.project.knobs:
            if knob.name not in config:
                continue
            if knob.group is not None:  # the cluster writes only what differs on each host
                remote[knob.name] = config[knob.name]
                continue
            if self.applied.get(knob.name) == config[knob.name]:
                continue
            value = config[knob.name]
            self.applied[knob.name] = None  # unknown until the set is verified
            if isinstance(knob.actuator, ShellActuator):
                knob.actuator.env["ITERATION"] = str(self.iteration)
            text = value if isinstance(value, str) else knob.domain.format(value)
            try:
                knob.actuator.apply(text)
            except ActuationError as exc:
                raise ActuationError(f"knob {knob.name}: {exc.message}") from None
            self.applied[knob.name] = value
            restart = restart or knob.restart
        restarted_hosts: set[str] = set()
        if remote and self.cluster:
            texts = {n: self.project.knob(n).text(v) for n, v in remote.items()}
            # the baseline puts each host at its own original (hosts of a group may start
            # different); any other configuration is written as it is on every host, also a
            # value that happens to be the first host's original
            originals = all(self.baseline.get(n) == v for n, v in remote.items())
            self.applied.update(dict.fromkeys(remote))  # unknown until verified
            restarted_hosts = self.cluster.apply(texts, originals=originals)
            self.applied.update(remote)
        if not serve and restart:
            self.restarted = False  # what runs, if anything, is not what the knobs now say
        if serve and self.workload.managed and (restart or not self.restarted):
            self.start_tried = True
            self._journal_service()
            self.workload.restart()
            self.restarted = True
        elif not restarted_hosts:
            return
        # one restart of the service, here or on the hosts where a restart knob was written
        self._count_restart(self.stage)
        self.fresh = True
        if self.project.benchmark.warmup:
            self.run_benchmark()

    def _journal_service(self) -> None:
        """Before hone first stops and starts a workload run by commands: how to do it again,
        durably, for a `restore` in another process. Left alone after a kill, it would go on
        running the values it last read (or stay stopped): `restore` restarts a service left
        running (`keep_running`) once the originals are back, and stops the one hone runs
        for itself. A launched process is recorded apart (children.py)."""
        workload = self.project.workload
        if self.restarted or workload.launch is not None:
            return  # recorded at the first restart
        spec = service_spec(workload, self.project.directory, _command_variables())
        self.journal.remember_workload(SERVICE, {}, spec, running=not self.owns_workload)
        self.journal.mark_restarting(SERVICE)

    def recover(self, baseline: Config) -> None:
        """Put the knobs back after a failed trial, and the workload if the failure took it
        down (a server that crashed under the benchmark): the baseline's knobs may be set
        already, and every reading after would run against nothing. If even that fails,
        stop the study."""
        if self.restarted and not self.workload.serving():
            self.restarted = False
        try:
            self.apply(baseline)
        except HoneError as exc:
            raise HoneError(f"could not put the knobs back after a failed trial: {exc}") from None

    def needs_restart(self, config: Mapping[str, Value]) -> bool:
        """Whether applying `config` now would restart the workload."""
        if not self.restarted:
            return self.workload.managed
        return any(
            knob.restart and self.applied.get(knob.name) != config[knob.name]
            for knob in self.project.knobs
            if knob.name in config
        )

    def restart_values(self, config: Mapping[str, Value | None]) -> tuple[Any, ...]:
        """The values of the knobs that need a restart: readings with equal ones can follow
        each other without one."""
        return tuple(config.get(k.name) for k in self.project.knobs if k.restart)

    def benchmark(self) -> dict[str, float]:
        """The benchmark's metrics, the mean of its `repeats` runs."""
        started = time.monotonic()
        runs = [self.run_benchmark() for _ in range(self.project.benchmark.repeats)]
        metrics = mean_metrics(runs)
        metrics["_benchmark_seconds"] = time.monotonic() - started
        return metrics

    def run_benchmark(self, prefix: list[str] | None = None) -> dict[str, float]:
        """One run of the benchmark command; `prefix` runs it under another program (perf)."""
        bench = self.project.benchmark
        counters = self.host_metrics.before() if self.host_metrics else {}
        if bench.host is not None:  # on a host of the cluster (not profiled: perf runs here)
            result = remote_benchmark(self.project.hosts[bench.host], bench.command, bench.timeout)
        else:
            result = shell.run_argv(
                [*(prefix or []), "/bin/sh", "-c", bench.command],
                timeout=bench.timeout,
                cwd=self.project.directory,
            )
        died = self.workload.exited()
        if died:
            self.restarted = False  # the next reading starts it again, whatever its values
            raise BenchmarkError(f"{died} (before the benchmark ended)")
        if result.timed_out:
            raise BenchmarkError(f"benchmark timed out after {bench.timeout:g}s")
        if result.returncode != 0:
            raise BenchmarkError(_exit_reason(result.returncode, result.tail(), bench.command))
        output = result.stdout + result.stderr
        metrics = self.host_metrics.after(counters) if self.host_metrics else {}
        for m in self.project.metrics:
            if not m.remote:
                metrics[m.name] = extract(m, output, cwd=self.project.directory)
        return {m.name: metrics[m.name] for m in self.project.metrics}

    # -- the way back ----------------------------------------------------------------------

    def restore(self) -> None:
        """Every knob back to its journaled original, here and on the cluster's hosts."""
        name = self.project.name
        outcomes = restore_project(name, self.journal)
        failed = [o for o in outcomes if not o.outcome.ok]
        if failed:
            # the journals still on disk: a host's own when only that host failed (this
            # machine's is archived once its knobs are back)
            kept = [self.journal, *Journal.for_project_hosts(name)]
            paths = ", ".join(str(j.path) for j in kept if j.path.exists())
            causes = "; ".join(
                f"{o.host or 'here'} {o.outcome.name}: {o.outcome.error}" for o in failed
            )
            raise RestoreFailed(
                f"could not restore: {causes} (journal kept: {paths}; `hone restore {name}` "
                "puts the rest back)",
                causes=causes,
            )
        if any(o.outcome.name == SERVICE_OUTCOME and o.outcome.value == "restarted" and not o.host
               for o in outcomes):  # fmt: skip
            self._count_restart("end")  # a service: restarted on its original values

    @property
    def owns_workload(self) -> bool:
        return self.project.workload.launch is not None or self.project.workload.owned

    def stop_owned_workload(self) -> None:
        """Stop what hone started, also when it never became ready (nginx answering 403 to
        the ready probe was left running after the run stopped)."""
        if self.start_tried and self.owns_workload:
            try:
                self.workload.stop()
            except HoneError as exc:
                self.reporter.warn(f"could not stop the workload: {exc}")

    def put_back(self, stopping: BaseException | None = None) -> bool:
        """Every knob back and the workload hone started stopped, before anything is recorded:
        whether every knob is back (what could not be is said as a warning, unless the run
        `stopping` on a failed restore: its last line says it, once)."""
        back = True
        self.restore_error = None
        try:
            self.restore()
        except HoneError as restore_error:
            if not isinstance(stopping, RestoreFailed):
                self.reporter.warn(str(restore_error))
            self.restore_error = restore_error
            back = False
        self.stop_owned_workload()
        return back

    def _count_restart(self, stage: str) -> None:
        self.restarts[stage] = self.restarts.get(stage, 0) + 1


def mean_metrics(runs: list[dict[str, float]]) -> dict[str, float]:
    """Each metric's mean over runs (a metric missing from a run is left out of its mean)."""
    if not runs:
        return {}
    return {k: float(np.mean([r[k] for r in runs if k in r])) for k in runs[0]}


def _exit_reason(code: int, tail: str, command: str) -> str:
    """Why a benchmark run failed, in words: 124 from a command that uses `timeout` is that
    limit running out (redis-benchmark under `timeout 40` with 3 busy-spinning I/O threads)."""
    reason = f"benchmark exited {code}"
    if code == 124 and re.search(r"(^|[\s;&|(])timeout\s", command):
        reason += " (its `timeout` ran out)"
    return f"{reason}: {tail}" if tail else reason


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
