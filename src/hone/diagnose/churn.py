"""Process churn: a server whose CPU time goes to processes that start and end within the
window, a process (and its setup) per connection or per request. PostgreSQL forks a backend for
each connection, which loads its catalog caches and ends at the disconnection; with clients
that connect per transaction (pgbench -C) nearly all of its CPU time is that, and its profile
shows it only as scattered kernel time (page faults of the fresh copies, fork, exit).

Only copies of the server count: forks that exec no other program (a backend, a prefork worker).
A build (`make` forking compilers) or a script running its commands starts as many processes,
which are its work, not the cost of a connection; a CGI server, which execs its script for each
request, is not told apart from them.

The evidence is twofold. The forks, execs and exits of the recorded processes are counted by
the window's system-call perf stat (module syscalls; the kernel adds one per fork in the parent
and per exec and exit in the child, nothing is recorded per event). The on-CPU samples say how
much of the CPU time was in processes born and gone within the window: those not listed when
the recorders started and ended by the analysis. Their CPU time is the kernel's own accounting:
a parent that waits for a child adds the child's user and system time to its own `cutime` and
`cstime` (/proc/PID/stat), read at the window's start and end; the thread counters sampled
every half second never see a backend that lives a few milliseconds, and perf samples it at
99 Hz only now and then.

Measured on the project's 2-CPU VM (load average 6-11 from other work), the postmaster of a
PostgreSQL 15 under `pgbench -S -c 4 -j 2`: with -C, 89-286 forks a second, no exec, as many
exits, and most of the samples in short-lived backends; without it, no fork in the window."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

#: Copies of the server a second that start and end (the lesser of the forks that exec no
#: other program and the exits) from which churn is a finding: autovacuum's workers (one per
#: database every autovacuum_naptime) or a pool that replaces a worker now and then stay far
#: below; pgbench -C made 89-286 on a loaded machine.
MIN_RATE = 5.0
#: The share of the on-CPU samples in processes born and gone within the window from which
#: churn is a finding: below it the short-lived processes are a side show of the CPU time.
MIN_SHARE = 0.2


@dataclass
class Churn:
    forks: int  # processes (and threads) the recorded ones started in the counted time
    execs: int  # those that exec'd another program (a build's compilers, a script's commands)
    exits: int  # those of them (and of the recorded) that ended
    seconds: float  # the time they were counted over
    short_share: float  # the share of the on-CPU samples in processes born and gone
    short: int  # how many such processes the samples hold
    cpu: float  # CPU time of the children reaped in the window, thread-seconds per second
    postgres: bool = False  # the diagnosed process is PostgreSQL's: a backend per connection

    @property
    def rate(self) -> float:
        """Copies of the server a second that came and went: the lesser of the forks that did
        not exec another program and the exits."""
        copies = max(self.forks - self.execs, 0)
        return min(copies, self.exits) / self.seconds if self.seconds > 0 else 0.0

    @property
    def evidence(self) -> bool:
        return self.rate >= MIN_RATE and self.short_share >= MIN_SHARE

    def to_dict(self) -> dict:
        return asdict(self)


def short_lived(
    samples: dict[int, int], listed: Iterable[int], alive: Callable[[int], bool]
) -> tuple[float, int]:
    """(share of the samples, how many processes) of the processes that were not `listed` as
    the recorders started and are no longer `alive`: born and gone within the window."""
    total = sum(samples.values())
    before = set(listed)
    short = [pid for pid in samples if pid not in before and not alive(pid)]
    return (sum(samples[pid] for pid in short) / total if total else 0.0), len(short)


def reaped(pid: int) -> float | None:
    """Seconds of CPU time of the children `pid` has waited for (cutime + cstime), None once
    it has ended."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(errors="replace").rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")
