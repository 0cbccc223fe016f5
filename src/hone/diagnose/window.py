"""One diagnosis window of a process, a command or a service: every recorder starts at once over
the same window (on-CPU samples with perf record -g, scheduler switches for off-CPU time, futex
and kernel lock events, per-thread /proc counters, the top-down counters when the machine has
them), stops together, and its data is analysed into a Diagnosis. The perf recorders and the
thread counters take every process of the process's tree or the service's group (`_Targets`),
the languages' own tools the JVMs and the Python processes among them (module runtimes).
The command line is in module cli."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import TypeVar

from hone.children import stop_group
from hone.diagnose import (
    churn,
    descendants,
    exits,
    golang,
    golines,
    heap,
    jvmgc,
    locks,
    nodejs,
    offcpu,
    pgwaits,
    scratch,
    softirq,
    syscalls,
    threads,
    topdown,
    verdict,
)
from hone.diagnose.descendants import alive
from hone.diagnose.hold import start_held
from hone.diagnose.jobs import Job, Processes
from hone.diagnose.machine import describe as _describe
from hone.diagnose.perf_record import enabled_outputs, finished, reached
from hone.diagnose.probe import Capabilities, probe, stack_depth_check
from hone.diagnose.record import Recording, failure
from hone.diagnose.report import DAEMON_PREFIX, FAILED_PREFIX, Diagnosis
from hone.diagnose.runtimes import PerfMap, Pythons, keep_perf_maps, language_jobs
from hone.diagnose.unit import Unit, find
from hone.errors import HoneError
from hone.shell import command_line

Waits = TypeVar("Waits", offcpu.OffCpu, locks.Locks)


#: Starts of a recorder of several processes before it gives up: perf fails its whole list
#: when one of the processes ends before perf has opened its events.
TRIES = 5
#: Seconds a process has run for the starts after a failed one to list it: connections opened
#: and closed in a few milliseconds (a client connecting per transaction) failed every start;
#: those born once perf follows the processes listed are recorded whatever their age.
SETTLED = 1.0


class NotStarted(HoneError):
    """perf did not start on the processes it was given (mostly: one of them had ended)."""


class _Targets:
    """The processes every recorder takes, listed anew as each starts (descendants.members):
    the diagnosed process and its descendants, or a service's control group. `listed` is the
    on-CPU recorder's last list: the processes whose stacks the profile holds, with those perf
    follows as they fork."""

    def __init__(self, pid: int, unit: Unit | None) -> None:
        self.pid = pid
        self.unit = unit
        self.listed = [pid]

    def __call__(self, settled: float = 0.0) -> list[int]:
        return descendants.members(self.pid, self.unit, settled)


T = TypeVar("T")


def _started(
    procs: Processes,
    targets: Callable[[float], list[int]],
    attempt: Callable[[list[int]], T],
) -> T:
    """`attempt` (one perf recorder of the processes it is given, NotStarted when perf did not
    start) with the processes listed as it starts. When one of them has ended since, again
    with those that have run for SETTLED seconds, up to TRIES starts or the window's end."""
    settled, tries = 0.0, 0
    while True:
        listed = targets(settled)
        tries += 1
        try:
            return attempt(listed)
        except NotStarted as error:
            said = str(error)
        # the diagnosed process ended, or none did: no use trying again
        if procs.stopped or tries == TRIES or not listed or not alive(listed[0]):
            break
        if all(alive(pid) for pid in listed):
            break
        settled = SETTLED
    if procs.stopped:
        raise HoneError(f"perf had not started recording when the window ended ({said})")
    if tries == 1:
        raise HoneError(said)
    raise HoneError(f"{said} (tried {tries} times; a process it was given ended each time)")


def _recorder(
    name: str,
    procs: Processes,
    targets: Callable[[float], list[int]],
    argv_of: Callable[[list[int]], list[str]],
    data: Path,
    analyse: Callable[[Path], object],
) -> Job:
    """perf record of the processes `targets` lists into `data` (started again when one of
    them ended as perf started: `_started`), then the analysis of it (perf script and more),
    as one background job."""

    def attempt(pids: list[int]) -> object:
        data.unlink(missing_ok=True)
        done = procs.run(argv_of(pids))
        if not finished(data):
            raise NotStarted(failure(done.stderr, done.returncode, 0))
        return analyse(data)

    return Job(name, partial(_started, procs, targets, attempt), data)


def _everywhere(settled: float) -> list[int]:
    """No process list: a system-wide recorder, which no process's end fails."""
    return []


def _capped(result: Waits, data: Path, max_size: str) -> Waits:
    """The analysis, marked when perf stopped its recording at `max_size`."""
    result.capped = reached(data, max_size)
    return result


def _wait(job: Job | None) -> dict[int, list[float]] | None:
    """The wake-up times when that recorder worked (off-CPU analysis goes on without them)."""
    if job is None:
        return None
    job.join()
    return job.result if isinstance(job.result, dict) else None


def _text(job: Job | None) -> str:
    """A recorder's perf script text when it worked (the analysis goes on without it)."""
    if job is None:
        return ""
    job.join()
    return job.result if isinstance(job.result, str) else ""


def _plan(
    targets: _Targets,
    duration: float,
    language: str,
    caps: Capabilities,
    work: Path,
    keep: Path,
    procs: Processes,
    notes: list[str],
    frequency: int,
    want_offcpu: bool,
    want_locks: bool,
) -> tuple[dict[str, Job], locks.Symbolizer | None, PerfMap, Pythons]:
    """The recorders this machine and these processes allow, not yet started, the lock
    recorder's symbolizer (the window reads the main process's mappings again once it runs),
    the JVMs' perf maps and the Python processes' py-spy (the main process's now, the others'
    as the window finds them). The perf recorders take every process of `targets`.

    Ours run until the window's end stops them (SIGINT); `bound` only caps them should hone
    itself die. The on-CPU recorder (hone.diagnose.record) times itself, and the window's end
    (a Ctrl-C or SIGTERM too) stops it as well: perf follows what the processes fork, and a
    daemon a command forked (a `memcached -d` in its script) kept it, and the diagnosis,
    running until the daemon ended or the `--duration` passed (a day without one) after the
    command had ended."""
    from hone.diagnose.record import event_of, record

    pid = targets.pid
    bound = duration + 60
    event = event_of(caps)
    perf_map = PerfMap([pid] if language == "java" else [])
    pythons = Pythons(work, bound, frequency, procs, notes)
    perf_data = keep / "perf.data"

    def oncpu_once(pids: list[int]) -> object:
        if not finished(perf_data):  # a start that failed; a finished one is the user's
            perf_data.unlink(missing_ok=True)
        targets.listed = pids
        try:
            return record(pids=pids, duration_s=duration, frequency_hz=frequency, event=event,
                          output_dir=keep, before_script=perf_map.write,
                          start=partial(procs.start, timed=True))  # fmt: skip
        except HoneError as error:
            if finished(perf_data):  # perf recorded: perf script failed
                raise
            raise NotStarted(str(error)) from None

    def oncpu() -> object:
        recording = _started(procs, targets, oncpu_once)
        if perf_map.wanted:
            notes.append(perf_map.note())
        return recording

    jobs = {"oncpu": Job("oncpu", oncpu, perf_data)}
    off_ok = want_offcpu and caps.has("tracepoint sched:sched_switch")
    if off_ok:
        wake_data = work / "wakeups.data"
        try:
            comm: str | None = Path(f"/proc/{pid}/comm").read_text(errors="replace").strip()
        except OSError:  # gone already: the window says so
            comm = None
        given = offcpu.last_given()  # before the snapshot: a thread born between is in both
        tids = sorted(tid for member in targets() for tid in threads.snapshot(member))
        wake_argv = offcpu.record_wakeups_argv(tids, wake_data, bound, comm, given)
        wakes = None
        if wake_argv:
            wakes = _recorder("wakeups", procs, _everywhere, lambda _: wake_argv, wake_data,
                              offcpu.script_wakeups)  # fmt: skip
            jobs["wakeups"] = wakes
        data = work / "sched.data"
        jobs["offcpu"] = _recorder(
            "offcpu",
            procs,
            targets,
            partial(offcpu.record_argv, output=data, duration=bound),
            data,
            lambda d: _capped(
                offcpu.analyse(offcpu.script(d), None, wakeups=_wait(wakes), per_process=True),
                d,
                offcpu.MAX_SIZE,
            ),
        )
    elif want_offcpu:
        notes.append("off-CPU: the sched:sched_switch tracepoint is not available")
    if off_ok and pgwaits.is_postgres(pid):
        futex = None
        if caps.has("tracepoint syscalls:sys_enter_futex"):
            futex_data = work / "pgfutex.data"
            futex_argv = partial(pgwaits.futex_argv, output=futex_data, duration=bound)
            futex = _recorder("pgfutex", procs, targets, futex_argv, futex_data, offcpu.script)
            jobs["pgfutex"] = futex
        data = work / "pgwaits.data"
        jobs["pgwaits"] = _recorder(
            "pgwaits",
            procs,
            targets,
            partial(pgwaits.record_argv, output=data, duration=bound),
            data,
            lambda d: pgwaits.analyse(offcpu.script(d), _text(futex)),
        )
    lock_ok = want_locks and caps.has("tracepoint syscalls:sys_enter_futex")
    symbolizer = locks.Symbolizer(pid) if lock_ok else None
    if lock_ok:
        kernel_locks = caps.has("tracepoint lock:contention_begin")
        if not kernel_locks:
            notes.append("kernel lock contention: lock:contention_begin is not available")
        data = work / "locks.data"
        jobs["locks"] = _recorder(
            "locks",
            procs,
            targets,
            partial(locks.record_argv, output=data, duration=bound, kernel_locks=kernel_locks),
            data,
            lambda d: _capped(locks.analyse(offcpu.script(d), symbolizer), d, locks.MAX_SIZE),
        )
    elif want_locks:
        notes.append("locks: the syscalls:sys_enter_futex tracepoint is not available")
    jobs["topdown"] = Job("topdown", lambda: topdown.measure(targets(), bound, caps, procs.run))
    if caps.has(f"tracepoint {syscalls.EVENT}"):
        counts = work / "syscalls.csv"
        forks = all(caps.has(f"tracepoint {name}")
                    for name in (syscalls.FORK, syscalls.EXEC, syscalls.EXIT))  # fmt: skip

        def count(pids: list[int]) -> syscalls.Count:
            counts.unlink(missing_ok=True)
            try:
                return syscalls.count(syscalls.count_argv(pids, counts, bound, forks), counts,
                                      procs.start)  # fmt: skip
            except HoneError as error:
                raise NotStarted(str(error)) from None

        jobs["syscalls"] = Job("syscalls", partial(_started, procs, targets, count), counts)
    jobs.update(language_jobs(pid, language, pythons, perf_map, notes))
    return jobs, symbolizer, perf_map, pythons


def collect(
    pid: int,
    duration: float,
    *,
    frequency: int = 99,
    want_offcpu: bool = True,
    want_locks: bool = True,
    keep: Path | None = None,
    caps: Capabilities | None = None,
    release: Callable[[], None] | None = None,
    mark: str | None = None,
    unit: Unit | None = None,
) -> Diagnosis:
    """Record everything about `pid` for `duration` seconds (less if it exits) and analyse it.
    `release` is called when the recorders have started and the window begins (run_command
    holds its command stopped until then); `mark` is the one in its environment, which finds
    the daemons it leaves (module descendants); `unit` is the service `pid` is the main process
    of, whose other processes count beside it."""
    if not Path(f"/proc/{pid}").exists():
        raise HoneError(f"no process with pid {pid}")
    if not alive(pid):
        raise HoneError(
            f"pid {pid} is a zombie: it has exited and its parent has not reaped it yet; "
            "nothing runs to diagnose"
        )
    caps = caps or probe()
    if not caps.has("perf"):
        raise HoneError(caps.get("perf").detail if caps.get("perf") else "perf is missing")
    language = threads.language_of(pid)
    target = _describe(pid)
    work = scratch.make()
    try:
        return _record(pid, duration, language, target, caps, work, keep or work, frequency,
                       want_offcpu, want_locks, release, mark, unit)  # fmt: skip
    except TooShort:
        raise
    except HoneError as error:
        if alive(pid):
            raise
        # perf's own words name the syscall that failed, not that the process is gone
        raise HoneError(f"pid {pid} ended before perf could attach ({error})") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)


#: Seconds: a process that ends sooner after the window starts left about ten samples at 99
#: Hz, and `hone diagnose -- true` (a 0.02 s window) was told its run queue was saturated.
MIN_WINDOW = 0.1
#: The note (printed on the terminal too) of a --pid that ended before its window did.
ENDED = "pid {pid} ended {elapsed:.1f} s into the {duration:g} s window"
#: A process stopped through most of the window (Ctrl-Z, SIGSTOP, a debugger): it did not run,
#: and its threads' shares and the verdict count that time as sleep ("Mostly idle").
STOPPED = ("pid {pid} was stopped (state T: SIGSTOP, Ctrl-Z or a debugger) in {share:.0%} of "
           "the window's samples: it did not run then, and that time counts as sleep; SIGCONT "
           "continues it")  # fmt: skip


def failure_of(code: int) -> str:
    """`exit code 7`, or `killed by SIGKILL` for Popen's negative return codes."""
    if code >= 0:
        return f"exit code {code}"
    with contextlib.suppress(ValueError):
        return f"killed by {signal.Signals(-code).name}"
    return f"killed by signal {-code}"


def _exe(pid: int) -> str:
    """The process's executable ("" once it has ended): it changes when the process execs."""
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return ""


class TooShort(HoneError):
    """The process ended too soon after the window began for anything to be measured."""

    def __init__(self, who: str, elapsed: float) -> None:
        self.when = (f"{elapsed:.2f} s into the window, too soon to diagnose; "
                     "diagnose a run that lasts a second or more")  # fmt: skip
        super().__init__(f"{who} ended {self.when}")


def _record(
    pid: int,
    duration: float,
    language: str,
    target: str,
    caps: Capabilities,
    work: Path,
    keep: Path,
    frequency: int,
    want_offcpu: bool,
    want_locks: bool,
    release: Callable[[], None] | None = None,
    mark: str | None = None,
    unit: Unit | None = None,
) -> Diagnosis:
    """One window: start the recorders, sample the threads, stop everything, analyse."""
    notes: list[str] = []
    procs = Processes()
    targets = _Targets(pid, unit)

    def running() -> bool:
        """The window goes on while the process runs, or for a service any of its processes:
        nginx's busiest worker ends on a reload and the new workers serve on."""
        return alive(pid) or (unit is not None and any(map(alive, unit.pids())))

    jobs, symbolizer, perf_map, pythons = _plan(targets, duration, language, caps, work, keep,
                                                procs, notes, frequency, want_offcpu,
                                                want_locks)  # fmt: skip
    for job in jobs.values():
        job.start()
    try:
        _await_start([job for job in jobs.values() if job.output])
        kids = descendants.Watch(pid, mark, unit, targets.listed)
        memory, network = heap.Watch([*targets.listed, *kids.followed]), softirq.Watch(pid)
        collector, calls = jvmgc.Watch(pid), syscalls.Watch([*targets.listed, *kids.followed])
        titles = pgwaits.Titles(pid, unit) if "pgwaits" in jobs else None
        # a --pid that ended while the recorders started has no window: perf may have failed
        # to attach, or recorded nothing of it (on a loaded machine the start takes seconds)
        began = alive(pid)
        # the window starts here: a held command is released right after the first snapshot,
        # or its stopped time before the release would count as sleep
        sampler = threads.ThreadSampler([*targets.listed, *kids.followed]).start()
        children_cpu = churn.reaped(pid)
        if release:
            release()
        # a command may exit early: the window ends with it, not half a second later
        early = time.monotonic() + min(0.5, duration / 4)
        while time.monotonic() < early and alive(pid):
            time.sleep(0.02)
        if symbolizer:  # a held command has loaded its libraries by now
            symbolizer.refresh()
        if language == "native" and alive(pid):  # a wrapper may have exec'd the runtime by now
            language = threads.language_of(pid)
            late = language_jobs(pid, language, pythons, perf_map, notes)
            for name, job in late.items():
                jobs[name] = job
                job.start()
        # GOGC and the like as the Go program started with them (gone once it has ended)
        go_env = golang.settings(pid) if language == "go" else {}
        exe = _exe(pid)

        def runtimes_among(pids: list[int]) -> None:
            """The JVMs' perf maps, names and GC counters; the Python processes' py-spy."""
            perf_map.add(pids)
            collector.add(perf_map.pids)
            for job in pythons.add(pids):
                jobs[job.name] = job
                job.start()

        runtimes_among(targets.listed)
        early_names, _, early_dumps = _thread_names(pid, language, perf_map.pids, pythons.pids)
        oncpu = jobs["oncpu"]
        # a failed on-CPU recorder fails the diagnosis: say so now, not after the window
        while (
            time.monotonic() - sampler.started < duration
            and running()
            and (oncpu.is_alive() or oncpu.error is None)
        ):
            time.sleep(0.05)
            if time.monotonic() - memory.at >= 0.5:  # a command may exit with the window
                memory.sample()
                network.sample()
                kids.sample()
                sampler.follow(kids.followed)  # forked in the window: perf follows them
                calls.follow(kids.followed)
                memory.follow(kids.followed)
                runtimes_among(kids.followed)
                if language == "native" and _exe(pid) not in ("", exe):
                    # a wrapper exec'd its runtime after the first look: kafka-server-start.sh
                    # builds its class path for seconds, pyenv's shim forks 40 processes first
                    exe, language = _exe(pid), threads.language_of(pid)
                    for name, job in language_jobs(pid, language, pythons, perf_map,
                                                   notes).items():  # fmt: skip
                        jobs[name] = job
                        job.start()
                    collector.add(perf_map.pids)
                    if symbolizer:
                        symbolizer.refresh()
                    go_env = golang.settings(pid) if language == "go" else {}
                collector.sample()
                calls.sample()
                if titles:
                    titles.sample()
        stats = sampler.stop()  # the window ends here; the recorders end with it
        children_end = churn.reaped(pid)
        memory.sample()
        network.sample()
        kids.sample()
        collector.sample()
        calls.sample()
        # the on-CPU perf's own `sleep` began once it had attached, seconds after the others on
        # a busy machine: cut now, it lost the window's last part (nginx's workers forked by a
        # reload then). Once the process has ended, a daemon it forked would keep perf going.
        procs.stop(timed=not running())
        oncpu.join()
    finally:  # also on Ctrl-C and SIGTERM: no recorder of ours is left running
        procs.stop()
    ended = sampler.elapsed < duration and not running()
    # the late thread names (jstack: a second or two) while perf script reads the recordings
    late = Job("names", lambda: _thread_names(pid, language, perf_map.pids, pythons.pids))
    if any(map(alive, [pid, *perf_map.pids, *pythons.pids])):
        late.start()
    for job in [*jobs.values(), late]:
        if job.is_alive():
            job.join()
    if not began:  # collect says that it ended before perf could attach, with perf's words
        said = jobs["oncpu"].error
        raise said if isinstance(said, HoneError) else HoneError("its recorders were starting")
    if ended and sampler.elapsed < MIN_WINDOW:
        raise TooShort(f"pid {pid}", sampler.elapsed)
    if ended and not release:  # a command ends when it is done; a --pid was asked for the window
        notes.append(ENDED.format(pid=pid, elapsed=sampler.elapsed, duration=duration))
    if sampler.stopped_share(pid) >= 0.5:
        notes.insert(0, STOPPED.format(pid=pid, share=sampler.stopped_share(pid)))
    names, note, dumps = late.result if isinstance(late.result, tuple) else ({}, "", [])
    if late.error:
        note = f"{language} thread names at the window's end: {late.error}"
    threads.name_threads(stats, {**early_names, **names})
    if perf_map.pids and "locks" in jobs and isinstance(jobs["locks"].result, locks.Locks):
        locks.java_monitors(jobs["locks"].result, [*early_dumps, *dumps])
    if "locks" in jobs and isinstance(jobs["locks"].result, locks.Locks):
        locks.name_waiters(jobs["locks"].result, stats)
    if titles and isinstance(jobs["pgwaits"].result, pgwaits.PgWaits):
        jobs["pgwaits"].result.waiting = titles.waiting
    if note or early_names:
        runtime = "" if language == "native" else f"{language} "  # its JVMs' or Pythons'
        notes.append(note or f"{runtime}thread names taken early in the window")
    counted = jobs["syscalls"].result if "syscalls" in jobs else None
    made = (
        syscalls.measure(counted, calls, sampler.elapsed, held=release is not None)
        if isinstance(counted, syscalls.Count)
        else None
    )
    oncpu = jobs["oncpu"].result
    samples = oncpu.samples_by_pid() if isinstance(oncpu, Recording) else Counter()
    sampled = set(samples)
    # processes that ended unseen by the thread counters: a script's commands, a build's
    # compilers, each too short for the samples too (module exits)
    gone = exits.ended(oncpu.perf_data) if isinstance(oncpu, Recording) else {}
    unseen = [e for e in gone.values() if e.pid not in sampler.processes and e.pid != pid]
    stats += exits.thread_stats(unseen, sampler.elapsed)
    moved = None
    if isinstance(counted, syscalls.Count) and (counted.forks or counted.exits):
        share, short = churn.short_lived(samples, targets.listed, alive)
        cpu = 0.0  # unknown once the process has ended
        if children_cpu is not None and children_end is not None and sampler.elapsed > 0:
            cpu = (children_end - children_cpu) / sampler.elapsed
        moved = churn.Churn(counted.forks, counted.execs, counted.exits, counted.seconds,
                            round(share, 4), short, round(cpu, 4),
                            pgwaits.is_postgres(pid))  # fmt: skip
    recorded = _recorded([*targets.listed, *kids.followed], sampled, stats, sampler.processes)
    if len(recorded) > 1:
        target = _processes(recorded)
    return _analyse(pid, target, language, caps, jobs, stats, sampler.elapsed, work, notes,
                    frequency, memory.result(caps.has("hardware counters")), network.result(),
                    kids.result(sampled), collector if perf_map.pids else None,
                    made, list(recorded), pythons, go_env, moved, unseen, samples)  # fmt: skip


def _thread_names(
    pid: int, language: str, jvms: list[int], pythons: list[int]
) -> tuple[dict[int, tuple[str, list[str]]], str, list[str]]:
    """Thread names (thread id -> name and top frames) from the main process's language tool,
    jstack's of the other JVMs and py-spy's of the other Python processes (a dump takes the
    processes one forks too), each tool in a thread of its own (a jstack is a JVM starting: a
    second or two); one note for them all, and jstack's outputs (which say who is blocked on
    which monitor)."""
    asked = {pid: language, **{jvm: "java" for jvm in jvms}, **{p: "python" for p in pythons}}
    # Go and node have no such tool: their threads keep the kernel's names
    asked = {p: lang for p, lang in asked.items() if lang in ("java", "python") and alive(p)}
    if not asked:
        return {}, "", []
    with ThreadPoolExecutor(len(asked)) as pool:
        done = list(pool.map(threads.language_names, asked, asked.values()))
    names: dict[int, tuple[str, list[str]]] = {}
    for found, _, _ in done:
        names |= found  # thread ids are the machine's: no two processes share one
    dumps = [output for (_, _, output), lang in zip(done, asked.values(), strict=True)
             if lang == "java"]  # fmt: skip
    if len(done) == 1:
        return names, done[0][1], dumps
    named = sum(bool(found) for found, _, _ in done)
    failed = [f"pid {p}: {note}" for p, (found, note, _) in zip(asked, done, strict=True)
              if not found]  # fmt: skip
    note = f"thread names of {named} of {len(done)} processes ({len(names)} threads)"
    return names, "; ".join([note, *failed]), dumps


def _recorded(
    listed: list[int], sampled: set[int], stats: list[threads.ThreadStat], named: dict[int, str]
) -> dict[int, str]:
    """The processes recorded, each as `pid 12 (command)`: the main one first, then the busiest
    (by their threads' CPU time): those listed as the recorders started, those forked from them
    in the window and seen, and any other the on-CPU samples hold (forked and gone between two
    looks)."""
    cpu: dict[int, float] = {}
    for stat in stats:
        cpu[stat.pid] = cpu.get(stat.pid, 0.0) + stat.cpu_pct
    pids = list(dict.fromkeys([*listed, *sorted(sampled)]))
    ordered = pids[:1] + sorted(pids[1:], key=lambda p: -cpu.get(p, 0.0))
    return {pid: named.get(pid) or f"pid {pid}" for pid in ordered}


#: How many processes the target names; the rest are counted.
NAMED = 3


def _processes(recorded: dict[int, str]) -> str:
    """`3 processes: pid 12 (nginx: worker process), ...`, the first NAMED of them by name."""
    named = ", ".join(list(recorded.values())[:NAMED])
    more = f" and {len(recorded) - NAMED} more" if len(recorded) > NAMED else ""
    return f"{len(recorded)} processes: {named}{more}"


def _await_start(recorders: list[Job]) -> None:
    """Wait (up to 15 s) until each perf recorder (by its output file) has enabled its events:
    perf takes a while to start on a busy machine (1.5 s at a load of 9 on 2 CPUs), and the
    window (and the thread sampling) starts after. perf writes its file's header, reads the
    process's mappings, and only then enables its events: a held command released in between
    maps its libraries unseen by that recorder, and its waits in libc read `[unknown]`."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        enabled = enabled_outputs()
        if all(str(job.output) in enabled or not job.is_alive() for job in recorders):
            return
        time.sleep(0.05)


def _cpu_of(stats: list[threads.ThreadStat], pids: set[int] | None = None) -> float:
    """The CPU time of the threads (of those processes), in percent of one CPU."""
    return sum(t.cpu_pct for t in stats if pids is None or t.pid in pids)


#: The findings in the kernel's time that system calls lead to.
SYSCALL_KINDS = ("kernel-network", "kernel-unix", "kernel-files", "kernel-switch", "kernel-other")


def _analyse(
    pid: int,
    target: str,
    language: str,
    caps: Capabilities,
    jobs: dict[str, Job],
    stats: list[threads.ThreadStat],
    window: float,
    work: Path,
    notes: list[str],
    frequency: int,
    memory: heap.Heap | None = None,
    receive: softirq.Softirq | None = None,
    children: list[descendants.Child] | None = None,
    collector: jvmgc.Watch | None = None,
    calls: syscalls.Syscalls | None = None,
    processes: list[int] | None = None,
    pythons: Pythons | None = None,
    go_env: dict[str, str] | None = None,
    moved: churn.Churn | None = None,
    unseen: list[exits.Ended] | None = None,
    samples: Counter[int] | None = None,
) -> Diagnosis:
    oncpu = jobs["oncpu"]
    if oncpu.error:
        raise oncpu.error
    # a Go program's pprof names the source lines of its frames' addresses (module golines)
    profile = oncpu.result.profile(addresses=language == "go")  # type: ignore[union-attr]
    profile = golines.named_frames(profile)  # a stripped Go binary's frames
    if profile.frequency_hz and profile.frequency_hz < frequency:
        notes.append(
            f"on-CPU sampled at {profile.frequency_hz:g} Hz, not -F {frequency}: perf lowered it "
            "to the kernel's limit, kernel.perf_event_max_sample_rate"
        )
    if profile.perf_data and not Path(profile.perf_data).exists():
        profile.perf_data = None
    if str(work) in str(profile.perf_data or ""):
        profile.perf_data = None  # the temporary folder goes away
    if profile.total:  # no samples, nothing to judge the stacks by
        caps.add(stack_depth_check(profile.folded()))
    profile = exits.into_profile(profile, unseen or [], samples or Counter())
    for name, job in jobs.items():
        if job.error and name != "oncpu":
            notes.append(f"{pgwaits.UNRECORDED if name == 'pgwaits' else f'{name}: '}{job.error}")
    used = ["perf", "schedstat", "frame-pointer stacks", "software events"]
    if "offcpu" in jobs and not jobs["offcpu"].error:
        used += ["tracepoint sched:sched_switch", "tracepoint sched:sched_wakeup"]
    if "locks" in jobs and not jobs["locks"].error:
        used += ["tracepoint syscalls:sys_enter_futex", "tracepoint syscalls:sys_exit_futex",
                 "tracepoint lock:contention_begin"]  # fmt: skip
    if calls:
        used.append(f"tracepoint {syscalls.EVENT}")
    if moved:
        used += [f"tracepoint {name}" for name in (syscalls.FORK, syscalls.EXEC, syscalls.EXIT)]
    if language == "java" or collector:  # the main process or JVMs among the others
        used += ["jstack", "jcmd"]
    if pythons and pythons.pids:
        used.append("py-spy")
    off = jobs["offcpu"].result if "offcpu" in jobs else None
    found = jobs["locks"].result if "locks" in jobs else None
    for label, recording, size in (("off-CPU", off, offcpu.MAX_SIZE),
                                   ("locks", found, locks.MAX_SIZE)):  # fmt: skip
        if recording is not None and recording.capped:
            notes.append(
                f"{label}: perf stopped its recording at {size}B after {recording.window_s:.1f} s "
                f"of the {window:.1f} s window; its waits per second are over that part"
            )
    td = jobs["topdown"].result if not jobs["topdown"].error else None
    if not isinstance(td, topdown.Topdown):
        td = topdown.Topdown(False, evidence=f"perf stat failed: {jobs['topdown'].error}")
    if td.available:
        used += ["hardware counters"]
    else:
        td.software = topdown.software_split(stats)
    caps.mark_used(*used)
    cpus = os.cpu_count() or 1
    language_profile, spied = pythons.recorded() if pythons else (None, set())
    if language in ("native", "go") and 2 * _cpu_of(stats, spied) >= _cpu_of(stats) > 0:
        language = "python"  # a shell's or a supervisor's Python programs did most of the work
    # Name the hot function in the program's own language when its stacks are there.
    named = (
        language_profile
        if language == "python" and language_profile and language_profile.total
        else profile
    )
    pg = jobs["pgwaits"].result if "pgwaits" in jobs else None
    gc = collector.result(profile, window) if collector else None
    go_gc = golang.measure(profile, go_env) if language == "go" else None
    findings = verdict.decide(named, stats, window, cpus, off, found, td, memory, receive,
                              children, native=profile, pg=pg, gc=gc, go_gc=go_gc,
                              churn=moved)  # fmt: skip
    if calls:  # beside the time in system calls, how many there were
        for finding in findings:
            if finding.kind in SYSCALL_KINDS:
                finding.details.insert(0, f"system calls: {calls.verdict}")
    result = Diagnosis(
        profile=profile,
        target=target,
        pid=pid,
        language=language,
        window_s=round(window, 3),
        cpus=cpus,
        capabilities=caps,
        threads=stats,
        offcpu=off,
        locks=found,
        topdown=td,
        findings=findings,
        notes=notes,
        language_profile=language_profile,
        heap=memory,
        softirq=receive,
        gc=gc,
        go_gc=go_gc,
        syscalls=calls,
        processes=processes or [pid],
    )
    # other work taking the CPUs is no reason for a knob: only the process's own findings count
    result.suggest_knobs()
    return result


def run_command(
    command: list[str], duration: float | None, *, to_stderr: bool = False, **options: object
) -> Diagnosis:
    """Start the command, diagnose it until it exits (or for `duration`), then stop it. What the
    machine allows is probed before the command starts: probing takes half a second (more on a
    busy machine), which a short command would otherwise spend unrecorded. For the same reason
    the command is held at its first instruction after exec (module hold) and continued
    (SIGCONT) when every recorder has started and the window begins: perf takes 0.5-1.7 s to
    start, and a command that ran meanwhile had spent most of a short run's CPU time before the
    window, so its thread counters showed only the tail and the time after its exit as sleep.
    NODE_OPTIONS has node write the perf map that names its JavaScript (module nodejs). With
    `to_stderr` (--json) what the command prints goes to stderr: stdout holds the JSON alone."""
    options.setdefault("caps", probe())
    mark = uuid.uuid4().hex  # in its environment: finds the daemons it leaves
    env = {**os.environ, descendants.MARK: mark, "NODE_OPTIONS": nodejs.options(os.environ)}
    try:
        proc = start_held(command, stdout=2 if to_stderr else None, env=env)
    except OSError as error:
        raise HoneError(f"cannot run {command[0]}: {error.strerror}") from None

    def release() -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGCONT)

    try:
        try:
            result = collect(proc.pid, duration or 24 * 3600, release=release, mark=mark,
                             **options)  # type: ignore[arg-type]  # fmt: skip
        except TooShort as error:
            code = proc.wait()
            left = descendants.marked(mark, proc.pid)
            if left:  # `memcached -d`: it forked its server and ended at once
                raise HoneError(
                    f"{command[0]} ended (exit code {code}) at once and left a daemon running, "
                    f"{_daemons(mark, proc.pid)}: diagnose it with hone diagnose --pid {left[0]}"
                ) from None
            raise HoneError(f"{command[0]} ended (exit code {code}) {error.when}") from None
        except HoneError:
            if proc.poll() is None:
                raise
            raise HoneError(
                f"{command[0]} ended (exit code {proc.returncode}) before perf could attach; "
                "diagnose a run that lasts a second or more"
            ) from None
        result.target = command_line(command)
        if proc.poll():  # it ended on its own (hone stops it below), and not with success
            result.notes.insert(0, FAILED_PREFIX + failure_of(proc.returncode))
        if len(result.processes) > 1:  # it forked: how many processes are in the profile
            result.target += f", {len(result.processes)} processes"
        result.command = list(command)
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGINT)
            release()  # a command still held acts on the SIGINT once continued
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        # a shell's background jobs (`sh -c "a & b & wait"`) ignore the SIGINT that ends the
        # shell, as every non-interactive shell's do, and kept running after hone (a daemon
        # has a session of its own and is not in the group)
        stop_group(proc.pid, grace=5.0)
    keep = options.get("keep")
    keep_perf_maps(result.processes, keep if isinstance(keep, Path) else None)
    left = _daemons(mark, proc.pid)
    if left:
        result.notes.append(
            f"{DAEMON_PREFIX}{left}, in a session of its own: hone does "
            "not stop it; its CPU in the window is counted with the command's children"
        )
    return result


def _daemons(mark: str, session: int) -> str:
    """The processes a command left running outside its session (module descendants), each
    `pid N (command)`: stopping the command's process group does not reach them."""
    return ", ".join(_describe(pid) for pid in descendants.marked(mark, session))


def collect_unit(unit: Unit, duration: float, **options: object) -> Diagnosis:
    """A service for `duration` seconds: every process of its control group recorded, its
    busiest the main one (module unit); those moved into it in the window counted beside."""
    result = collect(unit.main(), duration, unit=unit, **options)  # type: ignore[arg-type]
    result.target = f"unit {unit.name}, {result.target}"
    return result


def follow_service(
    command: list[str],
    units: list[str],
    duration: float,
    *,
    to_stderr: bool = False,
    **options: object,
) -> Diagnosis:
    """`systemctl start UNIT`: systemd starts the service outside the command's tree and the
    command returns, so the command is run to its end unrecorded and the units it started are
    diagnosed for `duration` seconds (module unit). With `to_stderr` (--json) what the command
    prints goes to stderr."""
    try:
        done = subprocess.run(command, stdout=2 if to_stderr else None, check=False)
    except OSError as error:
        raise HoneError(f"cannot run {command[0]}: {error.strerror}") from None
    if done.returncode != 0:
        raise HoneError(f"{command_line(command)} failed (exit code {done.returncode}): no "
                        "service started to diagnose")  # fmt: skip
    unit = find(units)
    result = collect_unit(unit, duration, **options)
    result.notes.append(f"followed unit {unit.name}, which {command_line(command)} started")
    return result
