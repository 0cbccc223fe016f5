"""Why the winner won: where the benchmarked processes spent their time, baseline against winner.

After confirmation, one more interleaved pair of readings (the baseline, then the winner) runs
under `perf record` with hone diagnose's events: `cpu-clock` samples with call stacks (on-CPU)
and `sched:sched_switch` with stacks plus switch records (off-CPU, hone.diagnose.offcpu).
These two readings are kept out of every statistic: the profiler slows what it watches.

Each recording (the benchmark command's, and a launched workload's when hone started one)
becomes a *time profile* in microseconds: on-CPU stacks weigh their sampled CPU time, off-CPU
stacks the time the thread stayed off the CPU, with a last frame that names the wait state
(`[waiting for I/O]`, `[sleeping]`, `[waiting for a CPU]`). Time a process spends waiting for
its own child (wait4) is left out: the child is profiled itself.

One process name is explained, the *worker*: with a launched workload, the busiest of the names
in the workload's recording, as its knobs are the ones tuned (redis-benchmark and wrk use more
CPU than redis-server and nginx, yet are not what changed); without one, the busiest overall
(the benchmark is the work: sqlite, compress). The differential (hone.diagnose.diff) compares
each function's share of the worker's time."""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hone.diagnose import nodejs, offcpu
from hone.diagnose.diff import Change, diff, notable
from hone.diagnose.fold import Frame, parse_perf_script
from hone.diagnose.perf_record import scratch_record
from hone.diagnose.profile import Profile
from hone.diagnose.runtimes import keep_perf_maps
from hone.errors import HoneError

#: On-CPU sampling rate: higher than diagnose's 99 Hz, as a benchmark reading may be short.
FREQUENCY = 499
ON_CPU = f"cpu-clock/freq={FREQUENCY}/"
MAX_SIZE = "64M"
WAIT_FRAMES = {"io": "[waiting for I/O]", "sleep": "[sleeping]", "runqueue": "[waiting for a CPU]"}
#: Off-CPU stacks of a parent waiting for its child (the child's own time is in the profile).
CHILD_WAIT = {"do_wait", "kernel_wait4", "__do_sys_wait4", "__x64_sys_wait4", "do_waitid"}

#: Waiting for work: a request, a connection, a readable socket.
IDLE = re.compile(r"epoll_wait|ep_poll|\bpoll\b|do_select|__x64_sys_poll|__x64_sys_select")

#: Known functions and wait states: (pattern, what it is, words of knobs that act on it).
KNOWN: list[tuple[re.Pattern[str], str, tuple[str, ...]]] = [
    (
        re.compile(
            r"fdatasync|fsync|sync_file|jbd2|file_write_and_wait|blkdev_issue_flush|XLogFlush"
        ),
        "the sync of written data to the disk on commit",
        ("sync", "commit", "flush", "journal", "wal", "durab"),
    ),
    (
        re.compile(r"^\[waiting for I/O\]$|io_schedule"),
        "waiting for the disk",
        ("sync", "commit", "flush", "journal", "wal", "cache", "buffer", "dirty"),
    ),
    (
        re.compile(r"futex|pthread_mutex|pthread_cond"),
        "lock waits between threads",
        ("thread", "worker", "pool", "lock", "conn", "concurr"),
    ),
    (
        re.compile(r"epoll_wait|ep_poll|\bpoll\b|do_select|__x64_sys_poll"),
        "idle waiting for work",
        ("thread", "worker", "pool", "conn", "batch", "pipeline"),
    ),
    (
        re.compile(r"memcpy|memmove|copy_user|copy_to_user|copy_from_user|copyin|copyout"),
        "copying memory",
        ("buffer", "size", "cache", "batch", "chunk"),
    ),
    (
        re.compile(r"^\[waiting for a CPU\]$"),
        "waiting in the run queue for a CPU",
        ("thread", "worker", "affinity", "sched", "nice"),
    ),
    (
        re.compile(r"unlink|do_sys_open|openat"),
        "creating and deleting files (such as a journal file per transaction)",
        ("journal", "file", "mode"),
    ),
    (
        re.compile(r"page_fault|handle_mm_fault|clear_page"),
        "page faults",
        ("cache", "size", "huge", "mem", "buffer"),
    ),
]

#: The known kinds that are wait states (the I/O wait, the run queue), not what the code did.
WAIT_KINDS = {m for p, m, _ in KNOWN if any(p.search(w) for w in WAIT_FRAMES.values())}


def unavailable() -> str | None:
    """Why profiling cannot run here, or None: perf present and allowed both events."""
    perf = shutil.which("perf")
    if perf is None:
        return "perf is not installed"
    with tempfile.TemporaryDirectory(prefix="hone-why-") as folder:
        argv = [*record_argv(Path(folder) / "probe.data"), "true"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        return f"perf cannot record scheduler switches: {lines[-1] if lines else done.returncode}"
    return None


def record_argv(output: Path) -> list[str]:
    """`perf record` of a command and its children: on-CPU samples and off-CPU switches. The
    file stops growing at MAX_SIZE (a benchmark switching 100,000 times a second would write
    hundreds of megabytes): the shares then come from the reading's first part. A scratch
    recording, without build IDs: collecting them made perf read the file again after the
    benchmark ended (0.4 to 1.6 s of a compress reading's recording, 0.04 to 0.13 s without)."""
    return [
        *scratch_record(), "-q", "-g", "--switch-events", "-e", ON_CPU,
        "-e", "sched:sched_switch", "--max-size", MAX_SIZE, "-o", str(output), "--",
    ]  # fmt: skip


def benchmark_argv(output: Path) -> list[str]:
    """The benchmark's prefix for a profiled reading: `record_argv`, and node writing the perf
    map that names its JavaScript (hone.diagnose.nodejs), given through the environment to
    every node process the benchmark starts (no shell sees the value)."""
    return [*record_argv(output), "env", f"NODE_OPTIONS={nodejs.options(os.environ)}"]


def attach_argv(pids: list[int], output: Path, control: Path) -> list[str]:
    """The same recording of running processes (a workload hone launched and its children,
    such as a database's server processes; those they fork later are followed) until SIGINT.
    It starts disabled and is enabled through the `control` FIFOs (ctl, ack), so hone knows
    when it records."""
    fifos = f"fifo:{control / 'ctl'},{control / 'ack'}"
    targets = ",".join(map(str, pids))
    return [*record_argv(output)[:-1], "-D", "-1", "--control", fifos, "-p", targets]


@contextmanager
def attached(pids: Callable[[], list[int]], output: Path, timeout: float = 15.0) -> Iterator[None]:
    """Record the processes `pids()` names while the body runs; the body starts only once perf
    is recording (its attach takes a few tenths of a second, in which a database would fork the
    benchmark's connections unseen). A process that exits before perf attaches fails the attach:
    it is tried once more with the processes living then."""
    control = output.parent / f"{output.stem}-control"
    control.mkdir()
    os.mkfifo(control / "ctl")
    os.mkfifo(control / "ack")
    perf, failure = None, ""
    for _ in range(2):
        perf = subprocess.Popen(
            attach_argv(pids(), output, control),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        failure = _enable(perf, control, timeout)
        if not failure:
            break
        perf = None
    if perf is None:
        raise HoneError(f"perf could not attach to the workload's processes: {failure}")
    try:
        yield
    finally:
        perf.send_signal(signal.SIGINT)
        try:
            perf.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            perf.kill()
            perf.communicate()


def _enable(perf: subprocess.Popen[bytes], control: Path, timeout: float) -> str:
    """Enable a recording started disabled and wait for perf's ack: "" when it records, else
    why not (perf's last words). perf opens its control FIFO before it attaches, so it may
    still exit after hone opened it (a process gone before the attach): the write then finds
    no reader, which is such a failure too."""
    deadline = time.monotonic() + timeout
    ctl = -1
    while ctl < 0:
        if perf.poll() is not None or time.monotonic() > deadline:
            return _ended(perf)
        try:
            ctl = os.open(control / "ctl", os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # ENXIO: perf has not opened it yet
            time.sleep(0.02)
    ack = os.open(control / "ack", os.O_RDONLY | os.O_NONBLOCK)
    try:
        os.write(ctl, b"enable\n")
        while time.monotonic() < deadline and perf.poll() is None:
            ready, _, _ = select.select([ack], [], [], 0.1)
            if ready and os.read(ack, 16).startswith(b"ack"):
                return ""
    except BrokenPipeError:
        pass  # perf has gone: its last words below
    finally:
        os.close(ctl)
        os.close(ack)
    return _ended(perf)


def _ended(perf: subprocess.Popen[bytes]) -> str:
    """Stop a perf that did not start recording; its last line of error, or a timeout."""
    timed_out = perf.poll() is None
    if timed_out:
        perf.kill()
    lines = [line for line in perf.communicate()[1].decode(errors="replace").splitlines() if line]
    if lines:
        return lines[-1][:200]
    return "no ack in time" if timed_out else f"exit {perf.returncode}"


def time_profiles(recordings: list[Path]) -> list[Profile]:
    """On-CPU and off-CPU time of every thread, in microseconds: one profile per recording."""
    return [_time_profile(data) for data in recordings]


def _time_profile(data: Path) -> Profile:
    stacks: dict[tuple[str, tuple[Frame, ...]], int] = {}

    def add(thread: str, frames: tuple[Frame, ...], us: float) -> None:
        key = (thread, frames)
        stacks[key] = stacks.get(key, 0) + round(us)

    if not data.exists() or data.stat().st_size == 0:
        raise HoneError("perf record wrote no data", file=data)
    # the on-CPU samples alone (`-F trace:` leaves the scheduler switches out): a database's
    # switches with their stacks were 98 % of the text, and folding skipped them
    done = subprocess.run(
        ["perf", "script", "-i", str(data), "-F", "trace:"],
        capture_output=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise HoneError(f"perf script failed: {done.stderr.decode(errors='replace')[:200]}")
    on_cpu = parse_perf_script(done.stdout, count="period", event=ON_CPU)
    for (thread, frames), nanoseconds in on_cpu.items():
        add(thread, nodejs.script_frames(frames), nanoseconds / 1000)
    # the perf maps the reading's node processes wrote for it (benchmark_argv), once read
    mapped = {nodejs.map_pid(f.module) for (_, frames) in on_cpu for f in frames}
    keep_perf_maps((pid for pid in mapped if pid is not None), None)
    off = offcpu.analyse(offcpu.script(data), None)
    for kind, folded in off.stacks.items():
        for line, us in folded.items():
            thread, *names = line.split(";")
            if CHILD_WAIT.intersection(names):
                continue
            frames = tuple(Frame(_unknown(n), off.modules.get(n, "")) for n in names)
            add(thread, (*frames, Frame(WAIT_FRAMES[kind], "")), us)
    return Profile(stacks={k: v for k, v in stacks.items() if v > 0}, event="time (us)")


def merged(profiles: list[Profile]) -> Profile:
    """The recordings of one reading as one profile (the benchmark's and the workload's)."""
    stacks: dict[tuple[str, tuple[Frame, ...]], int] = {}
    for profile in profiles:
        for key, us in profile.stacks.items():
            stacks[key] = stacks.get(key, 0) + us
    return Profile(stacks=stacks, event="time (us)")


def worker(profile: Profile, served: Collection[str] = ()) -> str:
    """The process name (perf's comm) with the most time on a CPU or waiting for I/O (a shell
    or a client waiting on a pipe only sleeps); with `served`, the names seen in a launched
    workload's recording, the busiest of those: the server whose knobs were tuned, not its
    load generator. Should none of them be busy, the busiest overall."""
    busy: dict[str, int] = {}
    for (thread, frames), us in profile.stacks.items():
        if frames and frames[-1].function in (WAIT_FRAMES["sleep"], WAIT_FRAMES["runqueue"]):
            continue
        busy[thread] = busy.get(thread, 0) + us
    candidates = [t for t in busy if t in served] or list(busy)
    return max(candidates, key=lambda t: busy[t]) if candidates else "the benchmark"


def only(profile: Profile, process: str) -> Profile:
    """The profile's stacks of one process name."""
    stacks = {k: v for k, v in profile.stacks.items() if k[0] == process}
    return Profile(stacks=stacks, event=profile.event)


def working(profile: Profile) -> Profile:
    """The profile without the time asleep waiting for work (in epoll_wait, poll or select): a
    server's processes idle whenever its client is busy, and that time would dilute the share
    of everything they do for a request (a database's WAL sync on commit)."""
    stacks = {
        key: us
        for key, us in profile.stacks.items()
        if not (
            key[1]
            and key[1][-1].function == WAIT_FRAMES["sleep"]
            and any(IDLE.search(frame.function) for frame in key[1])
        )
    }
    return Profile(stacks=stacks, event=profile.event)


def _unknown(name: str) -> str:
    """Off-CPU stacks saved before offcpu.frame_name folded as on-CPU folding does name a frame
    of an unknown module `[[unknown]]`; on-CPU folding `[unknown]`."""
    return "[unknown]" if name == "[[unknown]]" else name


@dataclass
class Explained:
    """A known function or wait state that moved, what it is, and the knobs that act on it."""

    change: Change
    meaning: str
    knobs: list[str]


def explain(
    changes: list[Change], moved: dict[str, tuple[Any, Any]], importance: dict[str, float]
) -> list[Explained]:
    """For each known kind of time, the function of that kind that moved most (1 point or
    more), with the changed knobs whose names suggest they act on it.

    What fell comes before what rose: the shares sum to the whole, so when the winner no
    longer waits for something, all that is left rises with it. A PostgreSQL winner with
    synchronous_commit=off waited in the run queue for the same 0.30 s as the baseline, yet
    its share rose from 12 % to 37 % of a time that fell from 2.6 s to 0.8 s, and it pushed
    the WAL sync out of the paragraph.

    The falls of functions that a changed knob acts on lead, that of the most important knob
    first: the backends' lock waits (40-55 % of the baseline, more than the sync itself) are
    mostly backends waiting for the one that flushes the WAL, and no knob acts on them by
    name. A wait state does not lead, however far it fell: the I/O wait is where fdatasync's
    time went (and other reads' and writes'). All such functions lead, not only the first: a
    SQLite winner with synchronous=off and journal_mode=persist no longer syncs nor deletes
    its journal, and when the unlinks fell further than the sync (its share of the baseline
    is 7 % to 70 %, as the disk is busy or not), the paragraph named the unlinks and the I/O
    wait, and not the sync."""
    found: list[Explained] = []
    for pattern, meaning, words in KNOWN:
        match = next((c for c in changes if abs(c.delta) >= 0.01 and pattern.search(c.name)), None)
        if match is None or any(e.change.name == match.name for e in found):
            continue
        knobs = [k for k in moved if any(w in k.lower() for w in words)]
        found.append(Explained(match, meaning, knobs))

    def order(e: Explained) -> tuple[bool, bool, float, float]:
        acted = bool(e.knobs) and e.change.delta < 0 and e.meaning not in WAIT_KINDS
        weight = max((importance.get(k, 0.0) for k in e.knobs), default=0.0)
        return (not acted, e.change.delta > 0, -weight if acted else 0.0, -abs(e.change.delta))

    return sorted(found, key=order)


def paragraph(
    process: str,
    explained: list[Explained],
    top: list[Change],
    moved: dict[str, tuple[Any, Any]],
    importance: dict[str, float],
    lead: Change | None = None,
) -> str:
    """A few sentences in words, from the data: what moved and which knob acts on it. `lead`,
    the function whose own time moved most, comes first when it moved more than any known
    kind (lzma's library giving way to zlib's), so that a smaller known move (more waiting for
    a CPU) does not stand for the win; own time, as a caller's total share also moves when
    the unwinder sees a build's stacks differently (__libc_start_call_main 0 % -> 71 %)."""
    sentences: list[str] = []
    said: list[str] = []
    known = [e.change for e in explained]
    if (
        lead
        and lead.name not in {c.name for c in known}
        and (not known or abs(lead.delta) > max(abs(c.delta) for c in known))
    ):
        sentences.append(_moved(lead, process, own=True) + ".")
    for entry in explained[:2]:
        text = _moved(entry.change, process, entry.meaning)
        knobs = sorted(entry.knobs, key=lambda k: -importance.get(k, 0.0))[:2]
        if knobs and knobs != said:
            said = knobs
            text += ": the winner set " + ", ".join(
                f"{k}={moved[k][1]} (was {moved[k][0]})" for k in knobs
            )
        sentences.append(text + ".")
    if not sentences and top:
        sentences.append(_moved(top[0], process) + ".")
    ranked = [k for k in sorted(importance, key=lambda k: -importance[k]) if k in moved]
    if ranked:
        sentences.append(
            "Knobs that matter most: "
            + ", ".join(f"{k} ({100 * importance[k]:.0f} %)" for k in ranked[:3])
            + "."
        )
    return " ".join(sentences) or "no function's share of the time moved by 1 point or more."


def _moved(change: Change, process: str, meaning: str = "", own: bool = False) -> str:
    """`fdatasync (what it is) fell from 80 % to 5.0 % of app's time`; `own`: the time in the
    function itself, not in what it calls."""
    verb = "fell" if change.delta < 0 else "rose"
    what = f"{change.name} ({meaning})" if meaning else change.name
    what = f"the time in {what} itself" if own else what
    return f"{what} {verb} from {_pct(change.before)} to {_pct(change.after)} of {process}'s time"


def compare(
    before: Profile,
    after: Profile,
    moved: dict[str, tuple[Any, Any]],
    importance: dict[str, float],
    limit: int = 8,
    served: Collection[str] = (),
) -> dict[str, Any]:
    """The record stored with the study (`study.attrs.why`), about one process name: the
    busiest of `served` (the process names in a launched workload's recording) when given,
    else the busiest overall."""
    process = worker(before, served)
    before, after = working(only(before, process)), working(only(after, process))
    changes = diff(before, after)
    explained = explain(changes, moved, importance)
    # the known functions and wait states first, then the largest other moves (an unnamed
    # frame says nothing, and a frame without symbols may carry a neighbour's name)
    top = [e.change for e in explained]
    top += [c for c in notable(before, after, limit) if c not in top and c.name != "[unknown]"]
    top = sorted(top, key=lambda c: -abs(c.delta))[:limit]
    return {
        "process": process,
        "seconds": {
            "baseline": round(before.total / 1e6, 3),
            "winner": round(after.total / 1e6, 3),
        },
        "changes": [_change(c) for c in top],
        "explained": [
            {**_change(e.change), "meaning": e.meaning, "knobs": e.knobs} for e in explained
        ],
        "changed_knobs": {k: {"baseline": v[0], "winner": v[1]} for k, v in moved.items()},
        "importance": {k: round(v, 4) for k, v in importance.items()},
        "text": paragraph(process, explained, top, moved, importance, _own_lead(before, after)),
    }


def _own_lead(before: Profile, after: Profile) -> Change | None:
    """The named function whose own time (not its callees') moved most, a point or more."""
    own = diff(before, after, measure="self")
    unnamed = {"[unknown]", *WAIT_FRAMES.values()}
    return next((c for c in own if c.name not in unnamed and abs(c.delta) >= 0.01), None)


def lines(why: dict[str, Any] | None) -> list[str]:
    """The `hone show` lines of a study's why record (or the line saying why it is missing)."""
    if not why:
        return []
    if why.get("missing"):
        return [f"why it won: no profile ({why['missing']})"]
    out = [f"why it won: {why['text']}"]
    out.append(
        f"  time of {why['process']}: baseline {why['seconds']['baseline']:g} s, "
        f"winner {why['seconds']['winner']:g} s (one reading each, under perf)"
    )
    head = f"{'before':>7} {'after':>7} {'change':>8}"
    out.append(f"  {head}  function or wait state, with what it calls")
    for c in why["changes"]:
        out.append(
            f"  {_pct(c['before']):>7} {_pct(c['after']):>7} {_points(c['delta']):>8}  {c['name']}"
        )
    return out


def _change(c: Change) -> dict[str, Any]:
    return {
        "name": c.name,
        "module": c.module,
        "before": round(c.before, 4),
        "after": round(c.after, 4),
        "delta": round(c.delta, 4),
    }


def _pct(share: float) -> str:
    return f"{100 * share:.1f} %" if share < 0.1 else f"{100 * share:.0f} %"


def _points(delta: float) -> str:
    return f"{100 * delta:+.1f}"
