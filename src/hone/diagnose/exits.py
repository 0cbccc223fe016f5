"""The CPU time of the processes that ended inside the window, from the on-CPU recording.

perf samples a process it follows (`perf record -p`, inherited by what it forks) with an event of
its own per process, whose timer starts a full period (10.1 ms at 99 Hz) when the process does:
a process that runs for less is never sampled, and one that runs for 25 ms gives two samples. A
shell script, a build or a batch job does its work in such processes: `sh -c 'for i in $(seq
200); do awk ...; done'` ran 200 awks of 5 ms each, 1 s of CPU time, and its recording held no
sample at all (999 Hz: 1,050 samples of awk). The thread counters, read every 50 ms of processes
seen every half second, never see them either.

So the on-CPU recorder runs with `perf record -s` (inherit_stat): as each process it follows
ends, the kernel hands perf that process's count, which perf writes as a PERF_RECORD_READ with
the time the event ran, the process's exact time on a CPU. `ended` reads those and the names
(PERF_RECORD_COMM: the program each process exec'd last) from perf.data's records directly:
`perf script` prints neither.

One process per CPU may end uncounted. The kernel writes the READ only for an inherited copy of
perf's events, and its context-switch shortcut hands the original events (the ones perf opened
on the followed process) to a child when the CPU goes straight from parent to child; the process
that ends holding them leaves no count. In a shell loop that is the first command it runs, in
most recordings: 39 of 40 awks counted."""

from __future__ import annotations

import struct
from dataclasses import dataclass, replace
from pathlib import Path

from hone.diagnose.fold import Frame, Stack
from hone.diagnose.profile import Profile
from hone.diagnose.threads import ThreadStat

_READ, _COMM = 8, 3
_TIME_ENABLED, _TIME_RUNNING, _ID, _GROUP = 1, 2, 4, 8


@dataclass
class Ended:
    """A process that ended in the recording: its last program's name and its CPU seconds."""

    pid: int
    comm: str
    cpu_s: float


def ended(data: Path) -> dict[int, Ended]:
    """The processes perf followed that ended in the recording, by pid (their threads summed; a
    thread that ended in a process that lives on is no process ended); {} when the file cannot
    be read or was recorded without `-s`."""
    try:
        raw = data.read_bytes()
    except OSError:
        return {}
    if len(raw) < 104 or raw[:8] != b"PERFILE2":
        return {}
    attr_size, attrs_at, attrs_size, data_at, data_size = struct.unpack_from("<QQQQQ", raw, 16)
    # each attribute: perf_event_attr, then the file section of its event ids
    if attrs_size < attr_size or attr_size < 64 or attrs_at + attr_size > len(raw):
        return {}
    read_format = struct.unpack_from("<Q", raw, attrs_at + 32)[0]
    ids_at, ids_size = struct.unpack_from("<QQ", raw, attrs_at + attr_size - 16)
    if ids_at + ids_size > len(raw):
        return {}
    sampled = set(struct.unpack_from(f"<{ids_size // 8}Q", raw, ids_at))  # the first event's
    if not read_format & _TIME_RUNNING or read_format & _GROUP:
        return {}
    running = 16 + 8 * bool(read_format & _TIME_ENABLED)  # after pid, tid, value (and enabled)
    has_id = bool(read_format & _ID)
    cpu: dict[int, int] = {}
    whole: set[int] = set()  # processes whose main thread ended, not only some thread of theirs
    names: dict[int, str] = {}
    at, end = data_at, min(data_at + data_size, len(raw))
    while at + 8 <= end:
        kind, _, size = struct.unpack_from("<IHH", raw, at)
        if size < 8:
            break
        if kind == _READ and at + 8 + running + 16 <= end:
            pid, tid = struct.unpack_from("<II", raw, at + 8)
            ran, ident = struct.unpack_from("<QQ", raw, at + 8 + running)
            if not has_id or not sampled or ident in sampled:
                cpu[pid] = cpu.get(pid, 0) + ran
                if tid == pid:
                    whole.add(pid)
        elif kind == _COMM:
            pid, tid = struct.unpack_from("<II", raw, at + 8)
            if pid == tid:
                names[pid] = raw[at + 16 : at + size].split(b"\0", 1)[0].decode(errors="replace")
        at += size
    return {pid: Ended(pid, names.get(pid, "?"), ns / 1e9) for pid, ns in cpu.items()
            if pid in whole}  # fmt: skip


#: The module of the stacks that stand for the CPU time of processes perf did not sample.
UNSAMPLED = "short-lived processes, unsampled"


def programs(gone: list[Ended]) -> dict[str, list[Ended]]:
    """The processes by program name, the busiest program first."""
    by: dict[str, list[Ended]] = {}
    for process in gone:
        by.setdefault(process.comm, []).append(process)
    return dict(sorted(by.items(), key=lambda kv: -sum(p.cpu_s for p in kv[1])))


def thread_stats(gone: list[Ended], window_s: float) -> list[ThreadStat]:
    """One row per program for the thread table and the verdict's CPU time: the processes of
    it that ended unseen by the thread counters, their CPU time in percent of one CPU (above
    100 when several ran at once); the rest of their time is unknown, not sleep."""
    rows = []
    for comm, processes in programs(gone).items():
        cpu = 100 * sum(p.cpu_s for p in processes) / max(window_s, 1e-9)
        if round(cpu, 1) == 0:  # forked and ended before doing anything to speak of
            continue
        counted = _count(processes)
        rows.append(ThreadStat(tid=processes[0].pid, comm=comm, cpu_pct=round(cpu, 2),
                               user_pct=0.0, sys_pct=0.0, runq_pct=0.0, io_pct=0.0,
                               sleep_pct=0.0, name=f"{comm} ({counted})",
                               process=f"{counted} that ended in the window"))  # fmt: skip
    return rows


def _count(processes: list[Ended]) -> str:
    return f"{len(processes)} process{'es' if len(processes) != 1 else ''}"


def into_profile(profile: Profile, gone: list[Ended], sampled: dict[int, int]) -> Profile:
    """The profile with these processes' samples under their program's name (not one root per
    pid: 200 slivers of awk-PID), and the CPU time perf did not sample (`sampled`: samples by
    pid) as stacks of the program's name over a frame in module UNSAMPLED, so that the flame
    graph and the tables hold every program the command ran, in proportion to its time."""
    frequency = profile.frequency_hz or 0
    if not gone or frequency <= 0:
        return profile
    roots = {f"{p.comm}-{p.pid}": p.comm for p in gone}
    stacks: dict[tuple[str, Stack], int] = {}
    for (root, frames), count in profile.stacks.items():
        key = (roots.get(root, root), frames)
        stacks[key] = stacks.get(key, 0) + count
    for comm, processes in programs(gone).items():
        cpu = sum(p.cpu_s for p in processes)
        missing = max(0, round(cpu * frequency) - sum(sampled.get(p.pid, 0) for p in processes))
        if missing:
            frame = Frame(f"{comm} ({_count(processes)}, unsampled)", UNSAMPLED)
            stacks[(comm, (frame,))] = stacks.get((comm, (frame,)), 0) + missing
    addresses = None
    if profile.addresses is not None:  # a Go program's, keyed as its stacks
        addresses = {}
        for (root, frames), spread in profile.addresses.items():
            into = addresses.setdefault((roots.get(root, root), frames), {})
            for pcs, count in spread.items():
                into[pcs] = into.get(pcs, 0) + count
    return replace(profile, stacks=stacks, addresses=addresses)
