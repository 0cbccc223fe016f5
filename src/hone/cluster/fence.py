"""Fencing a host's writes to the hone process that owns them.

A controller killed with -9 leaves its ssh clients behind, and the host's shell runs on: a
write in flight lands whenever it gets there, possibly after `hone restore` has put the
original back, leaving the trial's value. So each run claims every host with a random token,
kept in a file of the login directory (one per project), every write of the run happens under
a lock on that file and only while the file still holds the run's token, and a restore takes
the host over (a new token, under the same lock) before it writes anything: a write already
running finishes first and is then written over, one that arrives later is refused."""

from __future__ import annotations

import hashlib
import secrets
import shlex
from dataclasses import dataclass, field

from hone.cluster.remote import run_steps
from hone.cluster.ssh import Host
from hone.errors import ActuationError

#: What a refused write says (a run whose hosts a restore, or another run, took over).
TAKEN_OVER = "another hone process of this project took the host over since this run began"


def lock_file(project: str) -> str:
    """The host's file (relative to the login directory) that holds the project's token and
    is locked around every write; named by a digest, so any project name makes a safe name."""
    return ".hone-fence-" + hashlib.sha256(project.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Fence:
    """One process's claim on the hosts of a project."""

    project: str
    token: str = field(default_factory=lambda: secrets.token_hex(8))

    @property
    def lock(self) -> str:
        return lock_file(self.project)

    def claim(self) -> str:
        """The step that makes this process the owner (run with the lock held)."""
        return f"printf '%s\\n' {shlex.quote(self.token)} > {shlex.quote(self.lock)}"

    def check(self) -> str:
        """The step before a write: fails unless this process still owns the host."""
        said = shlex.quote(TAKEN_OVER)
        return (
            f'[ "$(cat {shlex.quote(self.lock)} 2>/dev/null)" = {shlex.quote(self.token)} ] '
            f"|| {{ echo {said} >&2; false; }}"
        )

    def take(self, host: Host) -> None:
        """Claim the host, once any write running there under the lock has finished."""
        (step,) = run_steps(host, [self.claim()], stop_at_failure=True, lock=self.lock)
        if not step.ok:
            raise ActuationError(f"cannot claim the host: {step.text}", key=host.where())
