"""A host group's workload (a broker, a database server) stopped, started and checked on each
of its hosts over ssh (docs/cluster.md).

Each action is one POSIX sh script sent to `sh -s` on the host: the project's commands enter it
only through shlex.quote and run with `sh -c`, so no value of a knob or path reaches a shell
unquoted. A command's output goes to a temporary file on the host, not to ssh's pipe: a start
command that leaves a daemon behind would otherwise hold the session open."""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import asdict, dataclass
from typing import Any

from hone.cluster.fence import TAKEN_OVER, Fence
from hone.cluster.ssh import Host, shell_failed, ssh_failed
from hone.errors import ActuationError

#: Exit codes of the scripts below, each naming the step that failed.
_STEPS = {3: "stop", 4: "start", 5: "ready"}
#: The exit code of a run's script on a host another process took over (fence.py).
_FENCED = 7


@dataclass(frozen=True)
class HostWorkload:
    """The commands that run a group's workload on each of its hosts."""

    #: Launches the workload and returns (a daemon left in the background, a service start).
    start: str
    #: Stops it and returns once it is gone; succeeds when it was not running.
    stop: str
    #: Exits 0 once the workload serves; polled until `ready_timeout` seconds after a start.
    ready: str
    ready_timeout: float = 60.0

    def spec(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> HostWorkload:
        return cls(**spec)


def is_ready(host: Host, workload: HostWorkload) -> bool:
    """Whether the workload serves on the host now (its ready command, once)."""
    done = _call(host, _quiet(workload.ready, 5) + "\n", 30.0)
    if done.returncode not in (0, 5):
        raise ActuationError(f"workload check: {shell_failed(done)}", key=host.where())
    return done.returncode == 0


def start(host: Host, workload: HostWorkload, fence: Fence | None = None) -> None:
    """Start the workload and wait until it is ready; ActuationError naming the host and step.
    With a run's `fence`, only while the run still owns the host."""
    script = _quiet(workload.start, 4) + "\n" + _wait_ready(workload)
    _check(host, script, workload.ready_timeout + 60, fence)


def stop(host: Host, workload: HostWorkload) -> None:
    _check(host, _quiet(workload.stop, 3) + "\n", 120.0)


def restart(host: Host, workload: HostWorkload, fence: Fence | None = None) -> None:
    """Stop, start, wait until ready: one ssh call (with `fence`, as for start)."""
    script = "\n".join([_quiet(workload.stop, 3), _quiet(workload.start, 4), _wait_ready(workload)])
    _check(host, script, workload.ready_timeout + 180, fence)


def _quiet(command: str, code: int) -> str:
    """Run `command` with its output in the log file; on failure say its tail and exit `code`."""
    step = _STEPS[code]
    return (
        f'sh -c {shlex.quote(command)} </dev/null >"$log" 2>&1 || '
        f"{{ hone_say {shlex.quote(step + ' failed')}; exit {code}; }}"
    )


def _wait_ready(workload: HostWorkload) -> str:
    seconds = max(1, round(workload.ready_timeout))
    return (
        f"end=$(( $(date +%s) + {seconds} ))\n"
        f'until sh -c {shlex.quote(workload.ready)} </dev/null >"$log" 2>&1; do\n'
        f'  [ "$(date +%s)" -lt "$end" ] || '
        f"{{ hone_say 'not ready within {seconds} s'; exit 5; }}\n"
        "  sleep 0.2\ndone"
    )


_HEAD = (
    "log=$(mktemp) || exit 6\ntrap 'rm -f \"$log\"' EXIT\n"
    "hone_say() { printf '%s: %s\\n' \"$1\" \"$(tail -c 300 \"$log\" | tr '\\n' ' ')\" >&2; }\n"
)


def _call(
    host: Host, body: str, timeout: float, fence: Fence | None = None
) -> subprocess.CompletedProcess[str]:
    host.connect()
    lock = None
    if fence is not None:
        body, lock = f"{fence.check()} || exit {_FENCED}\n{body}", fence.lock
    done = host.run(_HEAD + body, timeout=timeout, lock=lock)
    failed = ssh_failed(done)
    if failed:
        raise ActuationError(failed, key=host.where())
    if lock is not None and done.returncode == _FENCED:
        raise ActuationError(f"workload left alone: {TAKEN_OVER}", key=host.where())
    return done


def _check(host: Host, body: str, timeout: float, fence: Fence | None = None) -> None:
    done = _call(host, body, timeout, fence)
    if done.returncode != 0:
        said = " ".join(done.stderr.split())[-300:] or f"exit {done.returncode}"
        raise ActuationError(f"workload {said}", key=host.where())
