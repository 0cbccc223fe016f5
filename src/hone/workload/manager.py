"""Starting, stopping and waiting for the workload under tuning.

Either user commands (A-Tune's startworkload/stopworkload) or a process hone launches itself
from a LaunchSpec (flags and environment variables as knobs). Readiness is a command polled
until it succeeds, while checking that a launched process is still alive."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from hone import shell
from hone.errors import BenchmarkError
from hone.project.model import Workload
from hone.shell import expand


class WorkloadManager:
    def __init__(self, workload: Workload, cwd: Path, log_dir: Path) -> None:
        self.workload = workload
        self.cwd = cwd
        self.log_path = log_dir / "workload.log"
        self.process: subprocess.Popen[bytes] | None = None

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
            argv = [expand(a) for a in self.workload.launch.command()]
            env = {**os.environ, **{k: expand(v) for k, v in self.workload.launch.env.items()}}
            with open(self.log_path, "ab") as log:
                try:
                    self.process = subprocess.Popen(
                        argv,
                        cwd=self.cwd,
                        env=env,
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                except OSError as exc:
                    raise BenchmarkError(f"cannot start {argv[0]}: {exc.strerror}") from None
        elif self.workload.start:
            self._command(self.workload.start, "start")

    def stop(self) -> None:
        if self.process is not None:
            launch = self.workload.launch
            _terminate(
                self.process, kill_at_once=launch is not None and launch.stop_signal == "KILL"
            )
            self.process = None
        elif self.workload.stop:
            self._command(self.workload.stop, "stop")

    def wait_ready(self) -> None:
        ready = self.workload.ready
        deadline = time.monotonic() + self.workload.ready_timeout
        last = None
        while True:
            if self.process is not None and self.process.poll() is not None:
                raise BenchmarkError(
                    f"workload exited with code {self.process.returncode}: {self._log_tail()}"
                )
            if not ready:
                return
            last = shell.run(ready, timeout=10, cwd=self.cwd)
            if last.ok:
                return
            if time.monotonic() > deadline:
                raise BenchmarkError(
                    f"workload not ready after {self.workload.ready_timeout:g}s: "
                    f"{last.tail() or self._log_tail()}"
                )
            time.sleep(0.1)

    def _command(self, command: str, what: str) -> None:
        result = shell.run(command, timeout=self.workload.ready_timeout, cwd=self.cwd)
        if not result.ok:
            why = "timed out" if result.timed_out else f"exit {result.returncode}"
            raise BenchmarkError(f"workload {what} failed ({why}): {result.tail()}")

    def _log_tail(self) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return " | ".join(lines[-3:])[:300]


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
