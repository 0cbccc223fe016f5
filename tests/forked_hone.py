"""`python -m hone ...` as a child process, without paying Python's start-up and hone's imports
for each command: they took 0.8 s of every one (Optuna, SQLAlchemy and Alembic alone 0.55 s), and
the tests run some two hundred. One helper process imports hone once and forks a child for each
command. The child is a process of its own, as `python -m hone` is: the tests' stdin, its own
stdout and stderr pipes, working folder, environment, signal handlers, exit code and exit
handlers; it registers its command's capability and runs hone's real entry point. Where the
command's environment differs from the helper's in anything Python or its libraries may read
while importing (anything but PER_COMMAND's), the command starts afresh."""

from __future__ import annotations

import array
import contextlib
import io
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

#: Read when a command runs, never while the helper imports: a test may set them freely. Some
#: are left in the tests' own environment by code run in-process: hone's Tuner sets ITERATION
#: and HONE_* for its benchmark; sklearn sets KMP_* when imported, and the helper imports it
#: too, so its OpenMP runtime loads with the values a fresh command's would.
PER_COMMAND = ("HONE_", "COLUMNS", "LINES", "PYTEST_CURRENT_TEST", "ITERATION", "KMP_")

#: What both helpers (this one and tune/started_hone's) run first: hone's imports, and `become`,
#: which a forked child calls to be the command: the request's stdin, stdout and stderr
#: descriptors, folder, environment and argv, then hone's real entry point.
PRELUDE = r"""
import array, io, json, os, selectors, socket, sys
import hone.cli.main
# besides the commands' modules, what `tune` (SciPy) and `analyze` / `train` (scikit-learn)
# import as they run: 0.5 s and 1.35 s of every such command
for name in (*hone.cli.main.CAPABILITIES, "hone.storage", "hone.tune.runner", "hone.tune.why",
             "hone.optimizers.auto", "hone.analyze.analysis"):
    __import__(name)

def receive(channel, count):  # the next request and its `count` descriptors; None at the end
    fds = array.array("i")
    message, ancillary, _, _ = channel.recvmsg(65536, socket.CMSG_SPACE(count * fds.itemsize))
    if not message:
        return None
    for level, kind, data in ancillary:
        fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    return json.loads(message), fds

def become(request, fds):
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    # the streams as start-up makes them, on the new files (the old ones were made for
    # /dev/null: seekable, which a pipe is not)
    for fd, name in enumerate(("stdin", "stdout", "stderr")):
        old = getattr(sys, name)
        stream = io.TextIOWrapper(
            io.open(fd, "rb" if fd == 0 else "wb", closefd=False),
            encoding=old.encoding, errors=old.errors, newline="\n",
            line_buffering=fd == 2 or os.isatty(fd),
        )
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = [request["main"], *request["args"]]
    from hone.cli.main import run
    run()
    sys.exit(0)
"""

#: The helper: for each request (a JSON line and three descriptors: stdin, stdout, stderr)
#: forks, says the child's pid, waits and says its status.
HELPER = (
    PRELUDE
    + r"""
channel = socket.socket(fileno=int(sys.argv[1]))
while True:
    received = receive(channel, 3)
    if received is None:
        break
    request, fds = received
    pid = os.fork()
    if pid == 0:
        channel.close()
        become(request, fds)
    for fd in fds:
        os.close(fd)
    channel.send(json.dumps({"pid": pid}).encode())
    _, status = os.waitpid(pid, 0)
    channel.send(json.dumps({"code": os.waitstatus_to_exitcode(status)}).encode())
"""
)


class Helper:
    """A helper process running `program` (hone imported, then its loop), the channel to it, and
    whether a command can be forked from it."""

    program = ""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.process = subprocess.Popen(
            [sys.executable, "-c", self.program, str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            env=env,
        )
        theirs.close()
        self.channel = ours

    def close(self) -> None:
        self.channel.close()  # the helper reads the end and exits
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def fits(self, env: dict[str, str]) -> bool:
        """Whether a child of the helper sees what a fresh interpreter with `env` would."""

        def imported(e: dict[str, str]) -> dict[str, str]:
            return {k: v for k, v in e.items() if not k.startswith(PER_COMMAND)}

        return self.process.poll() is None and imported(env) == imported(self.env)


class ForkedHone(Helper):
    """The helper for one-shot commands; `run` is `subprocess.run` of `python -m hone` with
    captured text output."""

    program = HELPER

    def __init__(self, env: dict[str, str]) -> None:
        super().__init__(env)
        self.busy = threading.Lock()  # one command at a time on the channel

    def run(
        self, args: list[str], *, env: dict[str, str], cwd: Path, timeout: float | None
    ) -> subprocess.CompletedProcess:
        """The command's result, forked if `fits(env)`, else run afresh."""
        if self.fits(env) and self.busy.acquire(blocking=False):
            try:
                return self._forked(args, env=env, cwd=cwd, timeout=timeout)
            finally:
                self.busy.release()
        argv = [sys.executable, "-m", "hone", *args]
        return subprocess.run(
            argv, capture_output=True, text=True, cwd=cwd, timeout=timeout, env=env
        )

    def _forked(
        self, args: list[str], *, env: dict[str, str], cwd: Path, timeout: float | None
    ) -> subprocess.CompletedProcess:
        argv = [sys.executable, "-m", "hone", *args]
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        main = str(Path(__import__("hone").__file__).with_name("__main__.py"))
        request = {"args": args, "env": env, "cwd": str(cwd), "main": main}
        try:
            rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, out_w, err_w]))]
            self.channel.sendmsg([json.dumps(request).encode()], rights)
        finally:
            for fd in (out_w, err_w):
                os.close(fd)
        pid = json.loads(self.channel.recv(4096))["pid"]
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            output = read_all([out_r, err_r], deadline)
            if output is None:
                raise subprocess.TimeoutExpired(argv, timeout)
        except BaseException:  # out of time, or the test was stopped: the child goes too
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            self.channel.recv(4096)  # its status: the channel is ready for the next command
            raise
        finally:
            os.close(out_r)
            os.close(err_r)
        code = json.loads(self.channel.recv(4096))["code"]
        return subprocess.CompletedProcess(argv, code, text(output[0]), text(output[1]))


def read_all(fds: list[int], deadline: float | None) -> list[bytes] | None:
    """Each pipe to its end, as `communicate` reads them; None if the deadline came first."""
    output = {fd: bytearray() for fd in fds}
    with selectors.DefaultSelector() as selector:
        for fd in output:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return None
            for key, _ in selector.select(left):
                chunk = os.read(key.fd, 65536)
                if chunk:
                    output[key.fd] += chunk
                else:
                    selector.unregister(key.fd)
    return [bytes(output[fd]) for fd in fds]


def text(data: bytes) -> str:
    """As `subprocess.run(text=True)` decodes: the locale's encoding, universal newlines."""
    return io.TextIOWrapper(io.BytesIO(data)).read()


#: The environment the tests start in, which the helper is started with.
SESSION_ENV: dict[str, str] = {}

#: The session's helper, started by the first command.
_HELPER: list[ForkedHone] = []


def run_hone(
    *args: str, env: dict[str, str], cwd: Path, timeout: float | None = None
) -> subprocess.CompletedProcess:
    """`subprocess.run([python, -m, hone, *args], capture_output=True, text=True, ...)`: the real
    `hone` command line in a child process, forked from the session's helper (or afresh)."""
    if not _HELPER:
        _HELPER.append(ForkedHone(SESSION_ENV))
    return _HELPER[0].run(list(args), env=env, cwd=cwd, timeout=timeout)


def close() -> None:
    """The session's helper ends, if one started."""
    while _HELPER:
        _HELPER.pop().close()
