"""The window's background work: each recorder is a Job (a thread holding its result or its
error), and every process the recorders start goes through Processes, so that the window's end
stops them all at once."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from hone.diagnose.perf_record import start_tied


class Job(threading.Thread):
    """A recorder running in the background; its result or its error, afterwards. `output`:
    the file its `perf record` writes, by which the window knows when it records."""

    def __init__(self, name: str, work: Callable[[], object], output: Path | None = None) -> None:
        super().__init__(name=name, daemon=True)
        self.work = work
        self.output = output
        self.result: object = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.work()
        except BaseException as error:  # reported as a note, the other recorders go on
            self.error = error


class Processes:
    """The recorders' processes, so that the window's end can stop them all (SIGINT: perf then
    writes its data and ends its `sleep`). System-wide recorders and `perf stat -p` do not end
    when the diagnosed process does."""

    def __init__(self) -> None:
        self.running: list[subprocess.Popen] = []
        self.timed: list[subprocess.Popen] = []
        self.lock = threading.Lock()
        self.stopped = False

    def start(self, argv: list[str], timed: bool = False, **popen: object) -> subprocess.Popen:
        """A recorder started where `stop` reaches it, and that ends with hone (start_tied);
        `timed`: one that ends on its own timer (the on-CPU perf's `sleep`), which the window's
        end may leave to finish."""
        process = start_tied(argv, **popen)
        with self.lock:
            self.running.append(process)
            if timed:
                self.timed.append(process)
            if self.stopped:
                process.send_signal(signal.SIGINT)
        return process

    def run(self, argv: list[str], **_: object) -> subprocess.CompletedProcess:
        process = self.start(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = process.communicate()
        return subprocess.CompletedProcess(argv, process.returncode, out, err)

    def stop(self, grace: float = 30.0, timed: bool = True) -> None:
        """SIGINT every recorder (but the timed ones, with `timed` False: they end on their own)
        and wait until each has ended. A SIGINT that reaches perf while
        it is still starting can be lost, so it is sent again every half second; a recorder
        still running after `grace` seconds gets SIGTERM, then SIGKILL. Their ends are looked
        for every 20 ms: perf writes its data within a few hundred, and the analysis waits for
        it. On Ctrl-C the interpreter exits right after this, so nothing may be left to the
        recorder threads."""
        with self.lock:
            self.stopped = True
            running = [p for p in self.running if timed or p not in self.timed]
        deadline = time.monotonic() + grace
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
            while any(p.poll() is None for p in running) and time.monotonic() < deadline:
                for process in running:
                    if process.poll() is None:
                        process.send_signal(sig)
                again = time.monotonic() + 0.5
                while any(p.poll() is None for p in running) and time.monotonic() < again:
                    time.sleep(0.02)
            deadline = time.monotonic() + 2
