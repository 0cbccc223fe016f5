"""Start a command held at its first instruction. A SIGSTOP sent after Popen returns lands late:
the command runs meanwhile (for seconds on a busy machine), so its own clock and CPU time start
before the diagnosis window, and a short command such as `true` can end before it. The child
asks to be traced instead (PTRACE_TRACEME, between fork and exec), so the kernel stops it with
SIGTRAP right after execve, before the program's first instruction, dynamic loader included;
hone then detaches with SIGSTOP and the program stays an ordinary stopped process until SIGCONT.
Where ptrace is refused (a seccomp filter, Yama's ptrace_scope 3, hone itself traced by strace
-f) the child runs untraced and gets the late SIGSTOP as before."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
from pathlib import Path

_PTRACE_TRACEME = 0
_PTRACE_DETACH = 17


def start_held(
    command: list[str], stdout: int | None = None, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Popen `command` in a session of its own (with `env`, else hone's environment), stopped
    before it runs (see the module). Raises OSError when it cannot be executed."""
    ptrace = ctypes.CDLL(None, use_errno=True).ptrace  # looked up before the fork, not in it
    ptrace.restype = ctypes.c_long
    ptrace.argtypes = (ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p)

    def trace_me() -> None:
        ptrace(_PTRACE_TRACEME, 0, None, None)  # refused: the command runs untraced

    proc = subprocess.Popen(
        command, start_new_session=True, stdout=stdout, env=env, preexec_fn=trace_me
    )
    if _tracer(proc.pid) != os.getpid():  # Popen returns after the exec, so TRACEME took or not
        os.killpg(proc.pid, signal.SIGSTOP)
        return proc
    _, status = os.waitpid(proc.pid, 0)  # the SIGTRAP stop after execve
    if os.WIFSTOPPED(status):
        ptrace(_PTRACE_DETACH, proc.pid, None, signal.SIGSTOP)
    else:  # killed before its first instruction: Popen cannot reap it again
        proc.returncode = os.waitstatus_to_exitcode(status)
    return proc


def _tracer(pid: int) -> int:
    """The pid tracing `pid` (TracerPid in /proc/PID/status), 0 for none or a process gone."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("TracerPid:"):
                return int(line.split()[1])
    return 0
