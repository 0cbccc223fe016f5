"""The verdict: what holds the process back, in plain words, ranked.

Every signal is put in the same unit, thread-seconds per second of the window (1.0 = one thread
the whole time): on the CPU, waiting for a CPU (run queue), blocked in uninterruptible sleep (I/O),
waiting on a contended lock, asleep. The largest wins, with lock waits counted double: threads
waiting on one lock serialise, so more CPUs would not help, and the time under the lock shows as
CPU time of the holder. On-CPU time splits into the program's own code (`cpu`) and the kernel's
(`kernel-network`, `kernel-unix`, `kernel-files`, `kernel-memory`, `kernel-switch`,
`kernel-other`, module kernel) by the share of samples on each side: a server whose time goes
to system calls is told what changes them, not to rebuild itself. Hardware top-down results,
when there are counters, refine a CPU-bound verdict into memory-, frontend- or
speculation-bound."""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, field

from hone.diagnose.churn import Churn
from hone.diagnose.descendants import Child
from hone.diagnose.exits import UNSAMPLED
from hone.diagnose.fold import is_kernel
from hone.diagnose.golang import GoGc
from hone.diagnose.golang import without_gc as without_go_gc
from hone.diagnose.heap import Heap
from hone.diagnose.jvmgc import Gc, is_gc_thread, without_gc
from hone.diagnose.kernel import KernelTime, split, without_tracing
from hone.diagnose.locks import Locks
from hone.diagnose.offcpu import OffCpu
from hone.diagnose.pgwaits import PgWaits, advice, describe, groups
from hone.diagnose.profile import Profile
from hone.diagnose.softirq import Softirq
from hone.diagnose.tables import function_table, module_name
from hone.diagnose.threads import ThreadStat
from hone.diagnose.topdown import Topdown, software_split

LOCK_WEIGHT = 2.0
MIN_SCORE = 0.05
#: A heap's weight against the CPU time it may slow: huge pages help a CPU-bound process only
#: by the part of its time spent on TLB misses and faults, unknown without counters.
HEAP_WEIGHT = 0.5
#: PostgreSQL's lock waits are a finding from this share of its backends' busy off-CPU time.
MIN_PG_SHARE = 0.2


@dataclass
class Finding:
    kind: str  # cpu, kernel-{network,unix,files,memory,other}, runqueue, lock, io, idle, memory,
    # frontend, speculation, heap, gc, go-gc, softirq, children, pg-lock, churn
    score: float  # thread-seconds per second (weighted for locks)
    headline: str
    details: list[str] = field(default_factory=list)
    #: False when the cause is outside the process (other work takes the CPUs): no knob or
    #: build of the process's own helps, so it suggests none.
    own: bool = True
    #: False when the kind's knobs do not act on what was measured (see kernel_findings).
    knobs: bool = True

    def to_dict(self) -> dict:
        return asdict(self)


def _busiest(threads: list[ThreadStat], key: str) -> ThreadStat | None:
    ranked = sorted(threads, key=lambda t: -getattr(t, key))
    return ranked[0] if ranked and getattr(ranked[0], key) > 0 else None


def _user_frame(stack: str, modules: dict[str, str]) -> str:
    """Where a wait was entered: the innermost frame outside the kernel, and when that is a system
    library's call (fdatasync in libc), also the program's own function it was reached from, the
    part a person can change: PostgreSQL's commits wait in fdatasync reached from XLogFlush
    (frame-pointer stacks may skip the callers in between, hence "reached", not "called")."""
    frames = stack.split(";")[1:]
    user = [(name, modules[name]) for name in frames
            if modules.get(name) and not is_kernel(modules[name])]  # fmt: skip
    if not user:
        return frames[-1] if frames else stack
    name, module = user[-1]
    site = f"{name} ({module})"
    if _LIBRARY.match(module):
        for caller, where in reversed(user[:-1]):
            if not _LIBRARY.match(where) and not caller.startswith("["):
                return f"{site} reached from {caller} ({where})"
    return site


#: The C library and the dynamic loader: a wait entered there was asked for by the caller.
_LIBRARY = re.compile(r"(libc|libpthread|librt|ld-linux[\w-]*)\.so\b")


def _cpu(profile: Profile, threads: list[ThreadStat], cpu: float,
         samples: str = "on-CPU samples") -> Finding:  # fmt: skip
    """The program's own code: named by its hottest function outside the kernel; `samples` says
    what the profile's shares are of."""
    rows = function_table(profile, order="self") if profile.total else []
    rows = [row for row in rows if not is_kernel(row.module)]
    hot = _busiest(threads, "cpu_pct")
    if rows:
        top = rows[0]
        module = module_name(top.module)
        of_module = f" of module {module}" if module != "?" else ""
        headline = (
            f"CPU-bound in function {top.name}{of_module} ({top.self_share:.0%} of {samples})"
        )
        if top.module == UNSAMPLED:
            headline = (
                f"CPU-bound in short-lived processes: {top.name}, {top.self_share:.0%} of "
                f"{samples} (the CPU time the samples missed, counted as samples: a process's "
                "first sample comes one sampling period after it starts, 10 ms at 99 Hz, so "
                "one that runs less has no stack; diagnose one such command alone for its "
                "functions)"
            )
        elif _unnamed_code(top.name, top.module):
            headline = (
                f"CPU-bound in code of module {module} that perf could not name "
                f"({top.self_share:.0%} of {samples}; the file has no symbols: its debug "
                "symbols, the distribution's -dbgsym or -debuginfo package, or a build with -g "
                "name the function)"
            )
    else:
        headline = "CPU-bound (no on-CPU samples to name the function)"
    if hot:
        headline += f", busiest thread {_named(hot, threads)} at {hot.cpu_pct:.0f}% of a CPU"
    details = [
        f"{row.name} ({module_name(row.module)}): {row.self_share:.1%} self"
        for row in rows[:5]
        if row.self_share >= 0.01
    ]
    if hot and hot.frames:
        details.insert(0, f"{hot.label} is running: " + " <- ".join(hot.frames[:3]))
    return Finding("cpu", cpu, headline, details)


def _named(thread: ThreadStat, threads: list[ThreadStat]) -> str:
    """The thread's name, with its process's pid when the threads are of several processes:
    nginx's workers, PostgreSQL's backends and their threads share one name ('most of all
    nginx' did not say which of two workers). Processes that did not run (an idle master, a
    wrapper's `sleep`) do not count."""
    several = len({t.pid for t in threads if t.cpu_pct or t.runq_pct}) > 1 and thread.pid
    return f"{thread.label} in pid {thread.pid}" if several else thread.label


def _unnamed_code(name: str, module: str) -> bool:
    """Whether the hottest function is code of an executable or library that perf could not
    name (folding calls it `[memcached]`: a stripped file, as Debian ships memcached, nginx,
    redis and PostgreSQL without their -dbgsym packages). A JIT's code (a perf map, anonymous
    memory) is not a file's: its names come from the runtime, not from debug symbols."""
    base = module.rsplit("/", 1)[-1]
    return (
        module.startswith("/")
        and name == f"[{base}]"
        and not (base.startswith("perf-") and base.endswith(".map"))
    )


KERNEL_PARTS = {
    "network": "the kernel's network stack",
    "unix": "the kernel's Unix-domain sockets (local clients)",
    "files": "the kernel's file system calls",
    "memory": "the kernel's memory management (page faults, mappings)",
    "interrupts": "interrupts while it ran (timer ticks, softirqs, preemption)",
    "switch": "the scheduler's switches out and back in (calls that block)",
    "other": "other kernel work",
}


def kernel_findings(time: KernelTime, threads: list[ThreadStat], cpu: float) -> list[Finding]:
    """One finding per part of the kernel the process's CPU time went to, scored by its share
    of the samples; the system calls that led there and the process's system time as evidence."""
    user = sum(t.user_pct for t in threads)
    system = sum(t.sys_pct for t in threads)
    sys_share = (
        f"; system time {system / (user + system):.0%} of its CPU time" if user + system else ""
    )
    leaves = sorted(time.functions.items(), key=lambda kv: -kv[1])[:5]
    details = [f"{name} ([kernel]): {n / time.samples:.1%} self" for name, n in leaves]
    findings = []
    for group in time.groups:
        calls = ", ".join(f"{name} {share:.0%}" for name, share in time.top_calls(group))
        headline = (
            f"CPU time in {KERNEL_PARTS[group]}: {time.group_share(group):.0%} of on-CPU samples "
            f"({calls}){sys_share}"
        )
        # interrupts come to whatever runs on the CPU: not the process's doing
        own = group != "interrupts"
        score = cpu * time.group_share(group)
        knobs = group != "files" or _lookups(time) >= LOOKUP_SHARE
        # a list of its own: the window adds lines to each kernel finding's details
        findings.append(Finding(f"kernel-{group}", score, headline, list(details), own, knobs))
    return findings


#: System calls that look paths up: vm.vfs_cache_pressure (the files knob) keeps the dentries
#: and inodes they walk cached, and does nothing for reads, writes or syncs of open files.
LOOKUP_CALLS = frozenset({
    "open", "openat", "openat2", "newfstatat", "newstat", "newlstat", "statx", "access",
    "faccessat", "faccessat2", "readlink", "readlinkat", "getdents64", "unlink", "unlinkat",
    "rename", "renameat", "renameat2", "mkdir", "mkdirat", "rmdir", "execve", "execveat", "chdir",
})  # fmt: skip
#: The file system finding suggests its knob only when lookups are this share of it or more:
#: 8,000 fdatasyncs a second and a loop of 1-byte writes to /dev/null were each offered
#: vm.vfs_cache_pressure; nginx serving one file (openat 52% of its file time) keeps it.
LOOKUP_SHARE = 1 / 3


def _lookups(time: KernelTime) -> float:
    """The share of the file system group's samples in path lookups."""
    calls = time.calls.get("files", {})
    total = sum(calls.values())
    return sum(n for call, n in calls.items() if call in LOOKUP_CALLS) / total if total else 0.0


def _kernel_before_code(findings: list[Finding], time: KernelTime) -> list[Finding]:
    """When most of the process's on-CPU time is in the kernel (system time above user time,
    the first split of CPU time), its largest part of the process's own doing comes before the
    program's code, though the code outweighs each part alone: no compiler flag changes the
    kernel's time. nginx under wrk beside other work: 60-70 % of its samples in the kernel,
    the network stack 28-33 % (the loopback's receive half moves to ksoftirqd on a busy
    machine), its own code and the C library 36 %, and it was told to tune compiler flags.
    Interrupts that came while it ran are not its doing, and do not count."""
    if time.share - time.group_share("interrupts") <= 0.5:
        return findings
    kinds = [f.kind for f in findings]
    parts = [i for i, f in enumerate(findings) if f.kind.startswith("kernel-") and f.own]
    if "cpu" not in kinds or not parts or parts[0] < kinds.index("cpu"):
        return findings
    ordered = list(findings)
    ordered.insert(kinds.index("cpu"), ordered.pop(parts[0]))
    return ordered


def _runqueue(threads: list[ThreadStat], runq: float, cpu: float, cpus: int) -> Finding:
    waiter = _busiest(threads, "runq_pct")
    share = runq / (runq + cpu) if runq + cpu else 0.0
    headline = (
        f"Run queue saturated: runnable threads waited for a CPU {runq:.2f} thread-seconds per "
        f"second ({share:.0%} of their runnable time)"
    )
    if waiter:
        headline += (
            f", most of all {_named(waiter, threads)} ({waiter.runq_pct:.0f}% of the window)"
        )
    # Whose fault: the process wants more CPUs than there are, or others take them.
    demand = cpu + runq
    own = demand >= 0.9 * cpus
    if own:
        headline += f"; its own runnable threads ({demand:.1f}) fill the {cpus} CPUs"
    else:
        headline += (
            f"; it wants only {demand:.1f} of {cpus} CPUs, so other work on the machine takes them"
        )
    load = os.getloadavg()[0]
    details = [f"load average {load:.1f} on {cpus} CPUs"]
    return Finding("runqueue", runq, headline, details, own=own)


def covered(recording: OffCpu | Locks, window: float) -> float:
    """The seconds a recording's waits are counted over: the window, or the first part of it
    when perf stopped the recording at its size limit."""
    return recording.window_s if recording.capped and recording.window_s > 0 else window


def _lock(locks: Locks, window: float) -> Finding | None:
    contended = locks.contended()
    window = covered(locks, window)
    if not contended or window <= 0:
        return None
    top = contended[0]
    total = sum(w.wait_ms for w in contended) / 1000 / window
    where = f" at {top.site}" if top.site else ""
    headline = (
        f"Waiting on lock {top.lock} ({top.kind}): {top.wait_ms / 1000 / window:.2f} "
        f"thread-seconds of waiting per second, {top.count} waits, longest {top.max_ms:.1f} ms"
        f"{where}; waiters: {', '.join(top.waiters[:4])}"
    )
    details = [f"{w.lock} ({w.kind}): {w.wait_ms:.1f} ms in {w.count} waits" for w in contended[:5]]
    return Finding("lock", LOCK_WEIGHT * total, headline, details)


def _pg_lock(pg: PgWaits) -> Finding | None:
    """PostgreSQL's backends waiting on its own locks, scored like a lock (waiters serialise),
    when the waits are a large part of the backends' time in the database."""
    if not pg.waits or pg.window_s <= 0 or pg.share < MIN_PG_SHARE:
        return None
    top, statements = groups(pg.waits)[0]
    if top.kind == "heavyweight" and pg.waiting:  # the process titles name every statement
        statements = sorted(pg.waiting, key=lambda tag: -pg.waiting[tag])
    total = pg.wait_us / 1e6 / pg.window_s
    seen = f" (statements seen waiting: {', '.join(statements)})" if statements else ""
    headline = (
        f"PostgreSQL lock waits: backends waited {total:.2f} thread-seconds per second "
        f"({pg.share:.0%} of their off-CPU time not spent waiting for clients), most of all "
        f"for a {describe(top)}{seen}: {top.wait_us / 1e6 / pg.window_s:.2f} thread-seconds "
        "per second"
    )
    details = [f"{describe(w)}: {w.wait_us / 1000:.1f} ms" for w in pg.waits[:5]]
    details += [f"advice: {tip}" for tip in dict.fromkeys(advice(w) for w in pg.waits[:3])]
    return Finding("pg-lock", LOCK_WEIGHT * total, headline, details)


def _io(offcpu: OffCpu | None, threads: list[ThreadStat], window: float) -> Finding:
    if offcpu and window > 0 and offcpu.stacks:
        io = offcpu.total_us("io") / 1e6 / covered(offcpu, window)
        sites: dict[str, float] = {}  # stacks that differ only in the kernel are one site
        for stack, us in offcpu.top("io", 20):
            site = _user_frame(stack, offcpu.modules)
            sites[site] = sites.get(site, 0.0) + us
        ranked = sorted(sites.items(), key=lambda kv: -kv[1])
        where = f", mostly in {ranked[0][0]}" if ranked else ""
        details = [f"{site}: {us / 1000:.1f} ms" for site, us in ranked[:5]]
    else:
        io = sum(t.io_pct for t in threads) / 100
        where, details = "", []
    headline = f"I/O wait: {io:.2f} thread-seconds per second in uninterruptible sleep{where}"
    return Finding("io", io, headline, details)


def _idle(offcpu: OffCpu | None, threads: list[ThreadStat], window: float) -> Finding:
    sleep = sum(t.sleep_pct for t in threads) / 100
    where = ""
    if offcpu:
        top = offcpu.top("sleep", 1)
        if top:
            where = f"; the longest sleep is in {_user_frame(top[0][0], offcpu.modules)}"
    headline = (
        f"Mostly idle: {len(threads)} thread{'s' if len(threads) != 1 else ''} slept "
        f"{sleep:.2f} thread-seconds per second and little else happened{where}"
    )
    return Finding("idle", 0.0, headline)


def _topdown(topdown: Topdown, cpu_finding: Finding) -> Finding | None:
    top = None
    for category, share in sorted(topdown.level1.items(), key=lambda kv: -kv[1]):
        if category != "Retiring" and share >= 30:
            top = (category, share)
            break
    if not top:
        return None
    category, share = top
    kind = {"Frontend Bound": "frontend", "Bad Speculation": "speculation"}.get(category, "cpu")
    children = topdown.level2.get(category, {})
    worst = max(children.items(), key=lambda kv: kv[1]) if children else None
    if category == "Backend Bound":
        kind = "memory" if worst and worst[0] == "Memory Bound" else "cpu"
    detail = f" ({worst[0]} {worst[1]:.0f}%)" if worst else ""
    headline = f"Top-down: {category} {share:.0f}% of pipeline slots{detail}"
    return Finding(kind, cpu_finding.score * share / 100, headline, [f"method {topdown.method}"])


def _heap(heap: Heap, cpu: float) -> Finding:
    """A large heap or many faults: worth trying huge pages, in proportion to the CPU time."""
    return Finding("heap", HEAP_WEIGHT * cpu, heap.verdict)


def _gc(gc: Gc, threads: list[ThreadStat], cpu: float) -> Finding:
    """A JVM collecting garbage: the collector's CPU time and its threads' wait for a CPU, or
    the share of the window the application stood still in pauses, whichever is more."""
    gc_runq = sum(t.runq_pct for t in threads if is_gc_thread(t.label)) / 100
    score = max(cpu * gc.gc_share + gc_runq, gc.pause_share)
    details = [f"{name}: {count:.0f} collections, {seconds:.2f} s"
               for name, (count, seconds) in gc.collections.items() if count]  # fmt: skip
    if gc.args:
        details.append(f"JVM options: {gc.args}")
    return Finding("gc", score, gc.verdict, details)


def _go_gc(gc: GoGc, cpu: float) -> Finding:
    """A Go program collecting garbage: its CPU time in the collector and in the allocator
    that makes the work (the same goroutines do both; allocating less cuts both)."""
    details = [f"marking (background workers, assists): {gc.mark:.1%} of the samples",
               f"sweeping and returning memory: {gc.sweep:.1%}",
               f"allocating (runtime.mallocgc): {gc.alloc:.1%}"]  # fmt: skip
    details += [f"allocates: {name} ({share:.0%} of the allocating samples)"
                for name, share in gc.callers.items()]  # fmt: skip
    details += [f"environment: {name}={value}" for name, value in gc.settings.items()]
    return Finding("go-gc", cpu * (gc.share + gc.alloc), gc.verdict, details)


def _softirq(softirq: Softirq) -> Finding:
    """NET_RX piled on one CPU while another idles: its softirq time is what RPS can move."""
    busy = next(c for c in softirq.cpus if c.cpu == softirq.busy_cpu)
    return Finding("softirq", busy.softirq, softirq.verdict)


def _churn(churn: Churn) -> Finding:
    """Processes started and ended in the window: their CPU time (the score) is the cost of a
    process per connection or request (fork, exec, the program's setup, exit)."""
    headline = (
        f"Process churn: {churn.rate:.0f} copies of it a second started and ended (forks "
        f"{churn.forks / churn.seconds:.0f}/s, of which exec'd another program "
        f"{churn.execs / churn.seconds:.0f}/s, exits {churn.exits / churn.seconds:.0f}/s); "
        f"{churn.short} processes born and gone within the window took {churn.short_share:.0%} "
        f"of the on-CPU samples; the children it reaped used {churn.cpu:.2f} CPUs"
    )
    details = []
    if churn.postgres:
        headline += ": PostgreSQL forks a backend for each connection, so clients connect per "
        headline += "transaction or per request"
        details.append(
            "advice: put a connection pool between the clients and PostgreSQL (pgbouncer in "
            "transaction mode, the driver's or the application server's pool) so backends "
            "live on; each new backend costs a fork and its catalog caches warmed again"
        )
    return Finding("churn", churn.cpu, headline, details)


def _children(children: list[Child]) -> Finding:
    """Work done by child processes (or a service's other processes) that the recorders did not
    follow (module descendants: a daemon set apart before the window, a process moved into the
    service's group): name the busiest, and how to diagnose it."""
    top = children[0]
    busy = sum(c.cpu_pct + c.io_pct for c in children) / 100
    more = f" and {len(children) - 1} more" if len(children) > 1 else ""
    unseen = "which this diagnosis does not record"
    where = f"other processes of unit {top.unit}" if top.unit else "child processes"
    headline = (
        f"The work is in {where}, {unseen}: {top.comm} "
        f"(pid {top.pid}) on CPU {top.cpu_pct:.0f}% and in I/O wait {top.io_pct:.0f}% of the "
        f"window{more}; diagnose it with --pid {top.pid} while it runs"
    )
    details = [
        f"{c.comm} (pid {c.pid}{', a daemon the command left' if c.daemon else ''}): "
        f"on CPU {c.cpu_pct:.1f}%, I/O wait {c.io_pct:.1f}%"
        for c in children[:5]
    ]
    return Finding("children", busy, headline, details)


def decide(
    profile: Profile,
    threads: list[ThreadStat],
    window_s: float,
    cpus: int,
    offcpu: OffCpu | None = None,
    locks: Locks | None = None,
    topdown: Topdown | None = None,
    heap: Heap | None = None,
    softirq: Softirq | None = None,
    children: list[Child] | None = None,
    native: Profile | None = None,
    pg: PgWaits | None = None,
    gc: Gc | None = None,
    go_gc: GoGc | None = None,
    churn: Churn | None = None,
) -> list[Finding]:
    """Findings, the top bottleneck first; 'mostly idle' when nothing stands out. A heap and
    the receive path become findings only on their evidence (modules heap and softirq), the
    children when they used the CPU or waited for I/O (module descendants). `native` is perf's
    profile when `profile` is a language's own (py-spy): only perf sees the kernel's frames.
    `pg` is PostgreSQL's lock waits in the process and its backends (module pgwaits). `gc` is a
    JVM's collector (module jvmgc): when it is a finding, the collector's samples and its
    threads' run-queue wait are its own, not the application's code or demand for CPUs.
    `go_gc` is a Go program's collector and allocator (module golang): when the collector is a
    finding, their samples are its own, and the CPU-bound verdict names the program's code.
    `churn` is the processes started and ended in the window (module churn).
    Samples of the kernel's tracing (hone's own recorders: module kernel) are left out of every
    share, and their part of the CPU time out of the scores; the demand for CPUs keeps it."""
    whole = native or profile
    perf, cut = without_tracing(whole)
    native, profile = (perf, profile) if native else (None, perf)
    demand = sum(t.cpu_pct for t in threads) / 100
    cpu = demand * (1 - cut / whole.total) if whole.total else demand
    in_kernel = split(native or profile)
    code_share = 1 - in_kernel.share
    collecting = gc is not None and gc.evidence
    app, samples = threads, "on-CPU samples"
    if gc and collecting:
        app = [t for t in threads if not is_gc_thread(t.label) and t.label not in gc.gc_threads]
        total, profile = profile.total, without_gc(profile)
        rest = split(profile)
        code_share = (rest.samples - rest.kernel) / total if total else 0.0
        samples = "the on-CPU samples outside the collector"
    elif go_gc and go_gc.evidence:
        total, profile = profile.total, without_go_gc(profile)
        rest = split(profile)
        code_share = (rest.samples - rest.kernel) / total if total else 0.0
        samples = "the on-CPU samples outside Go's collector and allocator"
    runq = sum(t.runq_pct for t in app) / 100
    cpu_finding = _cpu(profile, app, cpu * code_share, samples)
    findings = [cpu_finding, _runqueue(app, runq, demand, cpus), _io(offcpu, threads, window_s)]
    findings += kernel_findings(in_kernel, threads, cpu)
    if locks:
        lock = _lock(locks, window_s)
        if lock:
            findings.append(lock)
    pg_lock = _pg_lock(pg) if pg else None
    if pg_lock:
        findings.append(pg_lock)
    if topdown and topdown.available:
        refined = _topdown(topdown, cpu_finding)
        if refined:
            findings.append(refined)
    if heap and heap.evidence:
        findings.append(_heap(heap, cpu))
    if gc and collecting:
        findings.append(_gc(gc, threads, cpu))
    if go_gc and go_gc.evidence:
        findings.append(_go_gc(go_gc, cpu))
    if softirq and softirq.concentrated:
        findings.append(_softirq(softirq))
    if children:
        findings.append(_children(children))
    if churn and churn.evidence:
        findings.append(_churn(churn))
    findings = sorted((f for f in findings if f.score >= MIN_SCORE), key=lambda f: -f.score)
    findings = _kernel_before_code(findings, in_kernel)
    waits = ("lock", "pg-lock")
    if not findings or (demand < 0.1 and findings[0].kind not in waits and findings[0].score < 0.1):
        findings.insert(0, _idle(offcpu, threads, window_s))
    elif _starved(findings[0], threads):
        findings.insert(0, _waiting(offcpu, threads))
    return findings


#: The share of its working threads' time a process sleeps from which it waits for work.
STARVED_SLEEP = 0.5


def _starved(top: Finding, threads: list[ThreadStat]) -> bool:
    """The top finding is other work's run queue while the process's working threads mostly
    slept: a server its clients keep short of requests, on a machine other work keeps busy.
    memcached with one client sending a request every 0.5-1 ms beside four busy loops on 2
    CPUs: its worker slept 77-84 % of the window, waited for a CPU 14-21 % and ran 2-3 %, and
    the verdict led with "Run queue saturated"; the wait slows each request, but the requests
    it is sent set its pace. Loaded by memcaslap -c 32 its workers slept 35-40 % (44 % of the
    working threads' time): the run queue stays first."""
    if top.kind != "runqueue" or top.own:
        return False
    return software_split(threads)["sleep"] / 100 >= STARVED_SLEEP


def _waiting(offcpu: OffCpu | None, threads: list[ThreadStat]) -> Finding:
    """The lead of a starved process: what its own threads did, its waits for work first."""
    split = software_split(threads)
    working = {t.comm for t in threads if t.cpu_pct + t.runq_pct + t.io_pct >= 1.0}
    where = ""
    if offcpu:  # where the threads that work wait for it (not a housekeeping thread's timer)
        sleeps = [(stack, us) for stack, us in offcpu.top("sleep", 50)
                  if stack.split(";")[0] in working
                  or stack.split(";")[0].rpartition("-")[0] in working]  # fmt: skip
        if sleeps:
            where = f"; they sleep in {_user_frame(sleeps[0][0], offcpu.modules)}"
    headline = (
        f"Mostly waiting for work: its working threads slept {split['sleep']:.0f}% of their time "
        f"and ran {split['on CPU']:.0f}%{where}: the requests it is sent, not the process, set its "
        f"pace; when one comes it waits for a CPU ({split['run queue']:.0f}% of their time) that "
        "other work on the machine holds"
    )
    return Finding("idle", 0.0, headline)
