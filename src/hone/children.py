"""Commands that change the system, recorded while they run.

A knob's set command runs in a process group of its own; when hone is killed mid-set the command
goes on and may write its value after `restore` has put the original back. A server hone
launches (a workload `process`, run with the trial's flags and environment) would go on serving
with them, holding its port and data directory. Each such command is
recorded as a file under the state directory while it runs (hone's pid, the group, and the
kernel's start time of the group leader, so a reused pid is never mistaken for it). `stop_orphans`
kills and reaps the groups whose hone process is gone: `restore` calls it first."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path

from hone.paths import state_dir


def _folder() -> Path:
    folder = state_dir() / "running"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def _started(pid: int) -> str | None:
    """The kernel's start time of a process (field 22 of /proc/PID/stat), None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(errors="replace")
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def add(pgid: int, command: str, grace: float = 0.0) -> Path | None:
    """Record a running command; None when the disk is full (restoring must still work).
    `grace`: seconds between SIGTERM and SIGKILL when it is stopped as an orphan (a server
    hone launched gets to shut down; a set command is killed at once)."""
    data = {
        "owner": os.getpid(),
        "owner_started": _started(os.getpid()),
        "pgid": pgid,
        "started": _started(pgid),
        "command": command[:200],
        "grace": grace,
    }
    try:
        record = _folder() / f"{pgid}.json"
        record.write_text(json.dumps(data))
    except OSError:
        return None
    return record


def _alive(pid: int, started: str | None) -> bool:
    return started is not None and _started(pid) == started


def stop_orphans(timeout: float = 10.0) -> list[str]:
    """Kill every recorded command group whose hone process is gone and wait until it is;
    returns the commands stopped."""
    stopped = []
    for record in sorted(_folder().glob("*.json")):
        try:
            data = json.loads(record.read_text())
        except (OSError, ValueError):
            record.unlink(missing_ok=True)
            continue
        if _alive(data["owner"], data["owner_started"]):
            continue  # its hone is still running and will reap it
        if _alive(data["pgid"], data["started"]):
            stop_group(data["pgid"], float(data.get("grace") or 0.0), timeout)
            stopped.append(data["command"])
        record.unlink(missing_ok=True)
    return stopped


def stop_group(pgid: int, grace: float, timeout: float = 10.0) -> None:
    """SIGTERM to the process group and `grace` seconds to end (none: straight to SIGKILL),
    then SIGKILL, and wait until no live member is left."""
    if grace:
        _signal_until_gone(pgid, signal.SIGTERM, grace)
    _signal_until_gone(pgid, signal.SIGKILL, timeout)


def _signal_until_gone(pgid: int, sig: int, timeout: float) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)
    deadline = time.monotonic() + timeout
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.02)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    # a killed leader stays a zombie until its parent (init) reaps it: count only live members
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError):
            fields = stat.read_text(errors="replace").rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                return True
    return False
