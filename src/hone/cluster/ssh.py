"""Running shell scripts on a host with OpenSSH itself.

Keys only (BatchMode: never a password prompt), the host key checked against a known_hosts file
(StrictHostKeyChecking=yes: an unknown or changed key is refused), and one master connection per
host kept for 60 s (ControlMaster) so that each further command costs a channel, not a handshake.
A script travels on ssh's standard input to `sh -s`: values are quoted inside it by the caller
(shlex.quote) and never appear on a command line."""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shlex
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hone.errors import ActuationError
from hone.paths import state_dir

HOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,62}")
#: How long a master connection outlives its last use.
PERSIST_SECONDS = 60
#: How long a script waits for the host's lock of its project (fence.py), and flock's exit
#: code when that time is up (Host.run says so).
LOCK_WAIT_SECONDS = 30
LOCK_BUSY = 75


class SshFailed(ActuationError):
    """ssh itself failed (exit 255): no connection, a host key refused, the connection lost."""


@dataclass(frozen=True)
class Host:
    """One machine of a cluster project, as the project names it."""

    name: str
    address: str
    user: str = "root"
    port: int = 22
    #: The private key file (else ssh's defaults and agent).
    identity: str | None = None
    #: The known_hosts file the host key is checked against (else ssh's default).
    known_hosts: str | None = None

    def spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"name": self.name, "address": self.address, "user": self.user}
        spec["port"] = self.port
        if self.identity:
            spec["identity"] = self.identity
        if self.known_hosts:
            spec["known_hosts"] = self.known_hosts
        return spec

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> Host:
        return cls(**spec)

    def target(self) -> str:
        return f"{self.user}@{self.address}:{self.port}"

    def control_path(self) -> Path:
        """A short socket name (Unix sockets allow about 100 bytes of path)."""
        return control_folder() / hashlib.sha256(self.target().encode()).hexdigest()[:16]

    def options(self) -> list[str]:
        options = [
            "-o", "BatchMode=yes",
            "-o", "StrictHostKeyChecking=yes",
            "-o", "ConnectTimeout=10",
            "-o", "ServerAliveInterval=5",
            "-o", "ServerAliveCountMax=3",
            "-o", f"ControlPath={self.control_path()}",
            "-p", str(self.port),
            "-l", self.user,
        ]  # fmt: skip
        if self.known_hosts:
            options += ["-o", f"UserKnownHostsFile={self.known_hosts}"]
        if self.identity:
            options += ["-o", "IdentitiesOnly=yes", "-i", self.identity]
        return options

    def connect(self, timeout: float = 20.0) -> None:
        """Start the master connection (once; a live one is reused). Its errors are kept in a
        file, not a pipe: the master lives on in the background and would hold a pipe open.
        One process at a time per socket (hone processes of other projects reach the same
        hosts): two masters started at once on one name leave all but one running for good
        as plain connections, since ssh gives the name to the first only."""
        path = self.control_path()
        with open(path.with_name(path.name + ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if path.exists():
                if self._master_alive():
                    return
                # a master killed outright (an OOM kill, a service's stop killing its control
                # group) leaves its socket: ssh would not take the name for a new master, and
                # the `-f -N` below would stay forever as a plain connection, one a call
                path.unlink(missing_ok=True)
            self._start_master(timeout)

    def _start_master(self, timeout: float) -> None:
        with tempfile.TemporaryFile() as errors:
            argv = ["ssh", *self.options(), "-o", "ControlMaster=yes"]
            argv += ["-o", f"ControlPersist={PERSIST_SECONDS}", "-f", "-N", "--", self.address]
            try:
                done = subprocess.run(
                    argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors,
                    timeout=timeout,
                )  # fmt: skip
            except subprocess.TimeoutExpired:
                raise SshFailed(f"no connection within {timeout:g} s", key=self.where()) from None
            if done.returncode != 0:
                errors.seek(0)
                raise SshFailed(
                    f"ssh cannot connect: {_last_line(errors.read().decode(errors='replace'))}",
                    key=self.where(),
                )

    def _master_alive(self) -> bool:
        """Whether a master answers on the socket (one that does not answer is as good as
        gone: a new one is started in its place)."""
        argv = ["ssh", *self.options(), "-O", "check", "--", self.address]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return False
        return done.returncode == 0

    def run(
        self, script: str, timeout: float = 60.0, lock: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run a POSIX sh script on the host (through the master connection when it is up).
        With `lock` (a file of the login directory) the script runs while util-linux's flock
        holds that file locked (ActuationError when it stays busy LOCK_WAIT_SECONDS); the
        script's own children do not hold it (-o), so a daemon it starts cannot keep it."""
        command = "sh -s"
        if lock is not None:
            wait = f"flock -o -w {LOCK_WAIT_SECONDS} -E {LOCK_BUSY} {shlex.quote(lock)}"
            command = f"{wait} {command}"
        argv = ["ssh", *self.options(), "-o", "ControlMaster=no", "--", self.address, command]
        try:
            done = subprocess.run(
                argv, input=script, capture_output=True, text=True, timeout=timeout,
                errors="replace",
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise ActuationError(f"no answer within {timeout:g} s", key=self.where()) from None
        if lock is not None and done.returncode == LOCK_BUSY:
            raise ActuationError(
                f"~/{lock} stayed locked for {LOCK_WAIT_SECONDS} s: a write of another hone "
                "process of this project is still running there",
                key=self.where(),
            )
        return done

    def where(self) -> str:
        return f"host {self.name} ({self.address})"

    def stop_master(self) -> None:
        """Close the master connection (tests; a restore after the host came back)."""
        path = self.control_path()
        if path.exists():
            argv = ["ssh", *self.options(), "-O", "exit", "--", self.address]
            subprocess.run(argv, capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 5
        while path.exists() and time.monotonic() < deadline:
            time.sleep(0.02)


#: The longest path a Unix socket may have (sun_path's 108 bytes, its NUL excluded).
SOCKET_PATH_MAX = 107
#: What ssh adds to a master's socket name while it makes it (`.` and 16 random letters).
_SSH_SUFFIX = 17


def control_folder() -> Path:
    """The folder of the master connections' sockets: `ssh/` in hone's state directory, or,
    when that path is too long for a socket (a HONE_HOME of some 70 characters: ssh then
    failed every connection, `unix_listener: path ... too long for Unix domain socket`), a
    short private folder of its own in the user's runtime directory or /tmp, named by a
    digest of the state directory. One found there must be this user's own, private, and not
    a link: another user could otherwise make it and take over the sockets."""
    folder = state_dir() / "ssh"
    if len(os.fsencode(folder)) + 1 + 16 + _SSH_SUFFIX <= SOCKET_PATH_MAX:
        folder.mkdir(mode=0o700, exist_ok=True)
        return folder
    digest = hashlib.sha256(os.fsencode(state_dir().resolve())).hexdigest()[:12]
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    base = Path(runtime) if runtime.startswith("/") and Path(runtime).is_dir() else Path("/tmp")
    folder = base / f"hone-ssh-{os.geteuid()}-{digest}"
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise ActuationError(f"cannot make {folder}: {exc.strerror}", key="ssh") from None
    found = folder.lstat()
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.geteuid() or found.st_mode & 0o077:
        raise ActuationError(
            f"{folder} (for ssh's sockets: HONE_HOME is too long a path for them) is not a"
            " private folder of this user's: remove it, or give HONE_HOME a shorter path",
            key="ssh",
        )
    return folder


def ssh_failed(result: subprocess.CompletedProcess[str]) -> str | None:
    """ssh's own failure (exit 255: no connection, host key refused), else None."""
    if result.returncode == 255:
        said = _last_line(result.stderr)
        return said if said.startswith("ssh: ") else "ssh: " + said
    return None


def shell_failed(result: subprocess.CompletedProcess[str]) -> str:
    """A host's shell that exited before the script could answer, with what it said: a login
    shell such as nologin exits 1 printing why on its standard output, sshd's own complaint
    (no home directory) goes to the errors; the script's framing lines are left out."""
    said = [
        " ".join(line.split())
        for line in (result.stdout + "\n" + result.stderr).splitlines()
        if line.strip() and "@@hone-" not in line
    ]
    words = "; ".join(dict.fromkeys(said))[:300]
    return f"the login shell exited {result.returncode}" + (f": {words}" if words else "")


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no reason given"
