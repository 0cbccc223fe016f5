"""Starting, stopping and waiting for the workload under tuning.

Either user commands (A-Tune's startworkload/stopworkload) or a process hone launches itself
from a LaunchSpec (flags and environment variables as knobs). Readiness is a command polled
until it succeeds, while checking that a launched process is still alive."""

from __future__ import annotations

import contextlib
import errno
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hone import shell
from hone.errors import BenchmarkError
from hone.project.model import Workload
from hone.shell import expand
from hone.tune.machine import descendants


class WorkloadManager:
    def __init__(
        self, workload: Workload, cwd: Path, log_dir: Path, env: Mapping[str, str] | None = None
    ) -> None:
        self.workload = workload
        self.cwd = cwd
        #: Variables for its commands beyond hone's own (a restore: the run's HONE_PORT, ...).
        self.env = dict(env or {})
        self.log_path = log_dir / "workload.log"
        self.process: subprocess.Popen[bytes] | None = None
        #: The launched process's record (children.py): `restore` stops it after a kill -9.
        self.record: Path | None = None

    @property
    def managed(self) -> bool:
        return self.workload.managed

    def restart(self) -> None:
        """Stop, start, wait until ready; BenchmarkError with the reason when it won't come up."""
        self.stop()
        self.start()
        self.wait_ready()

    def start(self) -> None:
        if self.workload.launch is not None:
            argv = self.workload.launch.command(expand)
            env = {**os.environ, **self.workload.launch.environment(expand)}
            why = _cannot_exec(argv[0], env, self.cwd)
            if why:
                raise BenchmarkError(f"cannot start {argv[0]}: {why}")
            grace = 0.0 if self.workload.launch.stop_signal == "KILL" else 5.0
            with open(self.log_path, "ab") as log:
                try:
                    self.process, self.record = shell.start_tracked(
                        argv,
                        shlex.join(argv),
                        grace,
                        cwd=self.cwd,
                        env=env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    )
                except OSError as exc:
                    raise BenchmarkError(f"cannot start {argv[0]}: {exc.strerror}") from None
        elif self.workload.start:
            self._command(self.workload.start, "start")

    def stop(self) -> None:
        """Stop the workload and, for a launched one, wait until every process it had started
        is gone: a server's children can outlive its first process (runuser's, or a database's
        backends), and a new server started beside them finds their lock file or shared memory."""
        if self.process is not None:
            launch = self.workload.launch
            tree = [(pid, _started(pid)) for pid in descendants(self.process.pid)]
            _terminate(
                self.process, kill_at_once=launch is not None and launch.stop_signal == "KILL"
            )
            self.process = None
            if self.record is not None:
                self.record.unlink(missing_ok=True)
                self.record = None
            _wait_gone(tree, self.workload.ready_timeout)
        elif self.workload.stop:
            self._command(self.workload.stop, "stop")

    def exited(self) -> str | None:
        """Why a launched server is no longer running, or None while it is. A reading taken
        after it exited measured something else: a server left on its port (by a killed run,
        or the system's own) answers the ready probe and the benchmark alike."""
        if self.process is None or self.process.poll() is None:
            return None
        tail = self._log_tail()
        code = self.process.returncode
        return f"workload exited with code {code}" + (f": {tail}" if tail else "")

    def serving(self) -> bool:
        """Whether the workload still runs and answers: its ready command succeeds (a launched
        process must also be alive). One without a ready command cannot tell: False."""
        if self.process is not None and self.process.poll() is not None:
            return False
        if not self.workload.ready:
            return self.process is not None
        return shell.run(self.workload.ready, env=self.env, timeout=10, cwd=self.cwd).ok

    def wait_ready(self) -> None:
        ready = self.workload.ready
        deadline = time.monotonic() + self.workload.ready_timeout
        last = None
        while True:
            died = self.exited()
            if died:
                raise BenchmarkError(died)
            if not ready:
                return
            last = shell.run(ready, env=self.env, timeout=10, cwd=self.cwd)
            if last.ok:
                return
            if time.monotonic() > deadline:
                why = "timed out" if last.timed_out else f"exit {last.returncode}"
                tail = last.tail() or self._log_tail()
                raise BenchmarkError(
                    f"workload not ready after {self.workload.ready_timeout:g}s "
                    f"(ready command: {why})" + (f": {tail}" if tail else "")
                )
            time.sleep(0.1)

    def _command(self, command: str, what: str) -> None:
        """A start or stop command, given `ready_timeout` seconds like the wait for ready."""
        limit = self.workload.ready_timeout
        result = shell.run(command, env=self.env, timeout=limit, cwd=self.cwd)
        if not result.ok:
            why = (
                f"timed out after {limit:g}s, the workload's ready_timeout"
                if result.timed_out
                else f"exit {result.returncode}"
            )
            tail = result.tail()
            raise BenchmarkError(f"workload {what} failed ({why})" + (f": {tail}" if tail else ""))

    def _log_tail(self) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return " | ".join(lines[-3:])[:300]


def service_spec(workload: Workload, cwd: Path, env: Mapping[str, str]) -> dict[str, Any]:
    """A workload run by start and stop commands, as the journal keeps it: `service` builds
    its manager from this in another process (`hone restore` after a kill)."""
    return {
        "start": workload.start,
        "stop": workload.stop,
        "ready": workload.ready,
        "ready_timeout": workload.ready_timeout,
        "cwd": str(cwd),
        "env": dict(env),
    }


def service(spec: Mapping[str, Any]) -> WorkloadManager:
    """The manager of a workload from its `service_spec`, to restart or stop it."""
    workload = Workload(
        start=spec.get("start"),
        stop=spec.get("stop"),
        ready=spec.get("ready"),
        ready_timeout=float(spec.get("ready_timeout") or 60.0),
    )
    cwd = Path(spec.get("cwd") or ".")
    return WorkloadManager(workload, cwd, cwd, env=spec.get("env"))


def _cannot_exec(program: str, env: Mapping[str, str], cwd: Path) -> str | None:
    """Why exec would refuse `program` with the server's PATH and working directory, in the
    words of its OSError; None when it would run. The server starts behind the gate
    (`shell.start_tracked`), whose shell would report a missing program only as an exit
    status after the start."""
    if "/" in program:
        candidates = [cwd / program]
    else:  # a relative PATH entry is relative to the server's working directory, too
        candidates = [cwd / folder / program for folder in os.get_exec_path(dict(env))]
    if any(path.is_file() and os.access(path, os.X_OK) for path in candidates):
        return None
    return os.strerror(errno.EACCES if any(p.exists() for p in candidates) else errno.ENOENT)


def _started(pid: int) -> str | None:
    """The start time of a living process (field 22 of its stat), None when it is gone or a
    zombie: with the pid it names the process, not a later one that reused the number."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(errors="replace")
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return None if fields[0] in ("Z", "X") else fields[19]


def _wait_gone(tree: list[tuple[int, str | None]], timeout: float) -> None:
    """Wait until these processes have exited; SIGKILL those left after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    left = [(pid, start) for pid, start in tree if start is not None]
    while left:
        left = [(pid, start) for pid, start in left if _started(pid) == start]
        if not left or time.monotonic() > deadline + 5:
            break
        if time.monotonic() > deadline:
            for pid, _ in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
    if left:
        raise BenchmarkError(
            "the stopped workload's processes did not exit: "
            + ", ".join(str(pid) for pid, _ in left)
        )


def _terminate(
    process: subprocess.Popen[bytes], grace: float = 5.0, kill_at_once: bool = False
) -> None:
    """SIGTERM the process group, SIGKILL it after a grace period, and reap it."""
    if process.poll() is None:
        signals = (signal.SIGKILL,) if kill_at_once else (signal.SIGTERM, signal.SIGKILL)
        for sig in signals:
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            try:
                process.wait(timeout=grace)
                break
            except subprocess.TimeoutExpired:
                continue
    process.wait()
