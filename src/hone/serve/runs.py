"""Tuning runs the server starts, stops and resumes, and the live events they report.

Each run is a `hone.serve.worker` child process (the library's Tuner, not the `hone` command);
a reader thread turns its JSON lines into events that the event stream endpoints relay."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hone.errors import HoneError
from hone.project.load import require_trusted


class EventLog:
    """Numbered events per topic, kept in a bounded ring, read by polling (thread-safe)."""

    def __init__(self, keep: int = 2000) -> None:
        self.keep = keep
        self.lock = threading.Lock()
        self.seq = 0
        self.events: dict[str, deque[tuple[int, dict[str, Any]]]] = {}

    def publish(self, topic: str, event: dict[str, Any]) -> None:
        with self.lock:
            self.seq += 1
            ring = self.events.setdefault(topic, deque(maxlen=self.keep))
            ring.append((self.seq, event))

    def since(self, topic: str, seq: int) -> list[tuple[int, dict[str, Any]]]:
        with self.lock:
            return [item for item in self.events.get(topic, ()) if item[0] > seq]

    def last_seq(self) -> int:
        with self.lock:
            return self.seq


@dataclass
class Run:
    project: str
    process: subprocess.Popen
    started: float = field(default_factory=time.time)
    study: str | None = None
    last: dict[str, Any] = field(default_factory=dict)

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def describe(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "pid": self.process.pid,
            "study": self.study,
            "running": self.running,
            "returncode": self.process.returncode,
            "started": self.started,
            "last": self.last,
        }


class RunManager:
    """At most one run per project; each run's events go to the topic `project:<name>`."""

    def __init__(self, projects: dict[str, Path], events: EventLog, storage: str | None) -> None:
        self.projects = projects
        self.events = events
        self.storage = storage
        self.runs: dict[str, Run] = {}
        self.lock = threading.Lock()

    def start(self, project: str, resume: bool = False, **options: Any) -> Run:
        path = self.projects.get(project)
        if path is not None:
            require_trusted(path)  # the file is read again at every start
        if path is None:
            raise KeyError(project)
        with self.lock:
            current = self.runs.get(project)
            if current is not None and current.running:
                raise HoneError(f"a run of {project} is already going (pid {current.process.pid})")
            command = [sys.executable, "-m", "hone.serve.worker", str(path)]
            for key, value in options.items():
                if value is not None:
                    command += [f"--{key}", str(value)]
            if self.storage:
                command += ["--storage", self.storage]
            if resume:
                command.append("--resume")
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,  # a Ctrl-C of the server reaches it only through stop()
                env={**os.environ},
            )
            run = Run(project, process)
            self.runs[project] = run
        threading.Thread(target=self._read, args=(run,), daemon=True).start()
        self.events.publish(f"project:{project}", {"event": "launched", "pid": process.pid})
        return run

    def _read(self, run: Run) -> None:
        topic = f"project:{run.project}"
        assert run.process.stdout is not None
        for line in run.process.stdout:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not isinstance(event, dict):
                continue
            if event.get("event") == "start":
                run.study = event.get("study")
            run.last = event
            self.events.publish(topic, event)
        code = run.process.wait()
        stderr = run.process.stderr.read() if run.process.stderr else ""
        self.events.publish(topic, {"event": "exit", "returncode": code, "stderr": stderr[-2000:]})

    def stop(self, project: str, timeout: float = 60.0) -> Run | None:
        """SIGINT, as Ctrl-C stops `hone tune`: the run puts every knob back, records the study
        as interrupted and exits."""
        run = self.runs.get(project)
        if run is None or not run.running:
            return None
        run.process.send_signal(signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            run.process.wait(timeout)
        return run

    def active(self, project: str) -> Run | None:
        run = self.runs.get(project)
        return run if run is not None and run.running else None

    def shutdown(self) -> None:
        for project in list(self.runs):
            self.stop(project, timeout=30)
