"""`subprocess.Popen([python, -m, hone, ...])` for the long-running commands the tuning tests
start and then watch, signal or kill (`hone tune`, `hone worker`), without paying Python's
start-up and hone's imports for each: 1.1 to 1.3 s of CPU a command, three at once for the
worker tests on two cores. As in forked_hone, a helper process imports hone once and forks a
child per command; this helper serves several commands at once and reports each one's pid
and exit code on a socket of that command's own, so a test may run two workers side by side.

The child is the command's own process: its pid is the one signals and `os.killpg` reach
(with `start_new_session`, it leads a session of its own, as Popen's child does), and its
exit code is Popen's (`-9` when killed). Where the command's environment differs from the
helper's in anything Python reads while importing, the command is started afresh."""

from __future__ import annotations

import array
import atexit
import contextlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import pytest
from forked_hone import PRELUDE, SESSION_ENV, Helper, read_all, text

from hone.storage import StudyStore

#: The helper: for each request (a JSON line and four descriptors: stdin, stdout, stderr and the
#: command's status socket) forks, and says the child's pid on its status socket, then its exit
#: code once a pidfd says it ended.
HELPER = (
    PRELUDE
    + r"""
channel = socket.socket(fileno=int(sys.argv[1]))
selector = selectors.DefaultSelector()
selector.register(channel, selectors.EVENT_READ)
running = {}  # pidfd: (pid, status socket)
while True:
    for key, _ in selector.select():
        if key.fileobj is not channel:
            pid, status = running.pop(key.fd)
            selector.unregister(key.fd)
            os.close(key.fd)
            _, code = os.waitpid(pid, 0)
            status.send(json.dumps({"code": os.waitstatus_to_exitcode(code)}).encode())
            status.close()
            continue
        received = receive(channel, 4)
        if received is None:
            sys.exit(0)
        request, fds = received
        pid = os.fork()
        if pid == 0:
            channel.close()
            for fd, (_, status) in running.items():
                os.close(fd)
                status.close()
            os.close(fds[3])
            if request["session"]:
                os.setsid()
            become(request, fds[:3])
        for fd in fds[:3]:
            os.close(fd)
        status = socket.socket(fileno=fds[3])
        status.send(json.dumps({"pid": pid}).encode())
        pidfd = os.pidfd_open(pid)
        running[pidfd] = (pid, status)
        selector.register(pidfd, selectors.EVENT_READ)
"""
)


class Started:
    """What a test uses of a Popen: pid, stdout, stderr, poll, wait, communicate, signals."""

    def __init__(
        self, args: list[str], status: socket.socket, out: IO | None, err: IO | None
    ) -> None:
        self.args = args
        self.status = status
        self.pid: int = json.loads(status.recv(4096))["pid"]
        self.stdout, self.stderr = out, err
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.status.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                self._ended(self.status.recv(4096))
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.status.setblocking(True)
            self.status.settimeout(timeout)
            try:
                self._ended(self.status.recv(4096))
            except TimeoutError:
                raise subprocess.TimeoutExpired(self.args, timeout) from None
        assert self.returncode is not None
        return self.returncode

    def _ended(self, message: bytes) -> None:
        self.returncode = json.loads(message)["code"]
        self.status.close()

    def communicate(self, timeout: float | None = None) -> tuple[Any, Any]:
        """Both pipes read to their end (as Popen's, the child's exit not waited for by the
        reading), then the exit code."""
        deadline = None if timeout is None else time.monotonic() + timeout
        pipes = [p for p in (self.stdout, self.stderr) if p is not None]
        output = read_all([p.fileno() for p in pipes], deadline)
        if output is None:
            raise subprocess.TimeoutExpired(self.args, timeout)
        read = dict(zip(pipes, output, strict=True))
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        self.wait(left)
        texts = []
        for pipe in (self.stdout, self.stderr):
            if pipe is None:
                texts.append(None)
                continue
            texts.append(text(read[pipe]) if _is_text(pipe) else read[pipe])
            pipe.close()
        return texts[0], texts[1]

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


#: A started command: forked, or started afresh.
Process = Started | subprocess.Popen


def _is_text(pipe: IO) -> bool:
    return isinstance(pipe, io.TextIOBase)


class _Helper(Helper):
    program = HELPER


_HELPER: list[_Helper] = []


def start_hone(
    *args: str,
    env: dict[str, str],
    cwd: Path | None = None,
    stdout: int | None = None,
    stderr: int | None = None,
    text: bool = False,
    start_new_session: bool = False,
) -> Process:
    """`subprocess.Popen([python, -m, hone, *args], ...)` with these arguments (stdout and
    stderr: None, PIPE or DEVNULL), forked from the session's helper where it can be."""
    if not _HELPER:
        _HELPER.append(_Helper(SESSION_ENV or dict(os.environ)))
    helper = _HELPER[0]
    argv = [sys.executable, "-m", "hone", *args]
    cwd = cwd or Path.cwd()
    if not helper.fits(env):
        return subprocess.Popen(
            argv, env=env, cwd=cwd, stdout=stdout, stderr=stderr, text=text,
            start_new_session=start_new_session,
        )  # fmt: skip
    ends: list[IO | None] = []
    theirs: list[int] = [0]
    opened: list[int] = []
    for wanted, inherited in ((stdout, 1), (stderr, 2)):
        if wanted == subprocess.PIPE:
            read, write = os.pipe()
            ends.append(open(read, "r" if text else "rb", closefd=True))  # noqa: SIM115
            theirs.append(write)
            opened.append(write)
        elif wanted == subprocess.DEVNULL:
            null = os.open(os.devnull, os.O_WRONLY)
            ends.append(None)
            theirs.append(null)
            opened.append(null)
        else:
            ends.append(None)
            theirs.append(inherited)
    ours, status = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    main = str(Path(__import__("hone").__file__).with_name("__main__.py"))
    request = {"args": list(args), "env": env, "cwd": str(cwd), "main": main,
               "session": start_new_session}  # fmt: skip
    try:
        fds = array.array("i", [*theirs, status.fileno()])
        helper.channel.sendmsg(
            [json.dumps(request).encode()], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)]
        )
    finally:
        for fd in opened:
            os.close(fd)
        status.close()
    return Started(argv, ours, ends[0], ends[1])


def wait_for_study(
    proc: Process, study: str, ready: Callable[[list[Any]], bool], seconds: float, what: str
) -> None:
    """Return once the stored trials of `study` are `ready`, looked at every 0.1 s while hone
    runs (its stderr a pipe); fail when hone ends first, or after `seconds` (not reached `what`)."""
    deadline = time.monotonic() + seconds
    store = None  # opened once: each opening checks the schema, on the cores hone runs on
    while time.monotonic() < deadline:
        time.sleep(0.1)
        if proc.poll() is not None:
            said = proc.stderr.read()
            said = said if isinstance(said, str) else text(said)
            pytest.fail(f"hone ended too early: {said[-500:]}")
        try:
            store = store or StudyStore()
            trials = store.trials(store.find(study))
        except Exception:  # the database or the study is not there yet
            continue
        if ready(trials):
            return
    pytest.fail(f"hone did not reach {what}")


@atexit.register
def close() -> None:
    """The helper ends, if one started (its children, if any, are not waited for)."""
    while _HELPER:
        _HELPER.pop().close()
