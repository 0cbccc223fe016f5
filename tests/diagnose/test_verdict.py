"""The verdict ranks signals in one unit (thread-seconds per second) and names names."""

from __future__ import annotations

from hone.diagnose.locks import Locks, LockWait
from hone.diagnose.offcpu import OffCpu
from hone.diagnose.profile import Profile
from hone.diagnose.threads import ThreadStat
from hone.diagnose.topdown import Topdown
from hone.diagnose.verdict import decide

PROFILE = Profile.from_folded({"srv;main;handle;parse_json": 80, "srv;main;handle;write": 20})


def thread(tid: int, name: str, cpu: float, runq: float = 0.0, io: float = 0.0) -> ThreadStat:
    return ThreadStat(tid, name[:15], cpu, cpu, 0.0, runq, io, 100 - cpu - runq - io, name)


def test_cpu_bound_names_function_and_thread() -> None:
    findings = decide(PROFILE, [thread(1, "worker-1", 95), thread(2, "idle", 0)], 10, 4)
    top = findings[0]
    assert top.kind == "cpu"
    assert "parse_json" in top.headline and "worker-1" in top.headline
    assert "80%" in top.headline


def test_run_queue_saturation_wins_over_cpu_when_waiting_dominates() -> None:
    threads = [thread(i, f"w{i}", 30, runq=65) for i in range(8)]
    findings = decide(PROFILE, threads, 10, 2)
    assert findings[0].kind == "runqueue"
    assert "5.20 thread-seconds" in findings[0].headline
    assert "its own runnable threads (7.6) fill the 2 CPUs" in findings[0].headline
    # One thread that gets a third of a CPU: the other work on the machine is the cause.
    crowded = decide(PROFILE, [thread(1, "w", 30, runq=65)], 10, 4)
    assert crowded[0].kind == "runqueue" and "other work on the machine" in crowded[0].headline


def test_contended_lock_beats_the_cpu_time_spent_under_it() -> None:
    locks = Locks(
        window_s=10,
        user=[
            LockWait("counter_lock", "0x1", "mutex", wait_ms=7000, count=900, max_ms=20,
                     waiters=["worker"], site="contend (app)"),
            LockWait("0x2", "0x2", "condition", wait_ms=9000, count=3),
        ],
    )  # fmt: skip
    threads = [thread(1, "worker", 90), thread(2, "worker", 20)]
    findings = decide(PROFILE, threads, 10, 2, locks=locks)
    assert findings[0].kind == "lock"
    assert "counter_lock" in findings[0].headline and "contend (app)" in findings[0].headline
    # Condition waits (idle workers) are not contention.
    assert "0x2" not in " ".join(f.headline for f in findings)


def test_io_wait_from_off_cpu_stacks() -> None:
    off = OffCpu(
        window_s=10,
        stacks={
            "io": {
                "db;main;flush;[db];fdatasync;blkdev_issue_flush;io_schedule": 4e6,
                "db;main;flush;[db];fdatasync;folio_wait_writeback;io_schedule": 2e6,
            },
            "sleep": {},
        },
        modules={"main": "db", "flush": "db", "[db]": "db", "fdatasync": "libc.so.6",
                 "blkdev_issue_flush": "[kernel.kallsyms]",
                 "folio_wait_writeback": "[kernel.kallsyms]", "io_schedule": "[kernel.kallsyms]"},
    )  # fmt: skip
    findings = decide(PROFILE, [thread(1, "db", 5, io=60)], 10, 2, offcpu=off)
    assert findings[0].kind == "io"
    # the libc call and the program's function that made it; stacks that differ only in the
    # kernel are one line, not the same name twice
    assert "fdatasync (libc.so.6) reached from flush (db)" in findings[0].headline
    assert findings[0].details == ["fdatasync (libc.so.6) reached from flush (db): 6000.0 ms"]


def test_idle_process() -> None:
    findings = decide(Profile.from_folded({}), [thread(1, "daemon", 0.5)], 10, 2)
    assert findings[0].kind == "idle"


def test_topdown_refines_cpu_bound() -> None:
    td = Topdown(
        True,
        "intel-perf-metrics",
        level1={"Frontend Bound": 10, "Bad Speculation": 5, "Backend Bound": 60, "Retiring": 25},
        level2={"Backend Bound": {"Memory Bound": 45, "Core Bound": 15}},
    )
    findings = decide(PROFILE, [thread(1, "worker", 100)], 10, 2, topdown=td)
    kinds = [f.kind for f in findings]
    assert kinds[0] == "cpu" and "memory" in kinds
    memory = findings[kinds.index("memory")]
    assert "Backend Bound 60%" in memory.headline and "Memory Bound 45%" in memory.headline


def test_code_perf_could_not_name_asks_for_its_symbols() -> None:
    """Debian ships memcached, nginx and redis stripped: the verdict said 'CPU-bound in function
    [memcached] of module memcached', a function name that is none. A JIT's code (a perf map)
    is named by its runtime, not by debug symbols."""
    from hone.diagnose.fold import Frame
    from hone.diagnose.profile import Profile
    from hone.diagnose.threads import ThreadStat
    from hone.diagnose.verdict import decide

    stripped = ("mc-worker", (Frame("start_thread", "/usr/lib/libc.so.6"),
                              Frame("[memcached]", "/usr/bin/memcached")))  # fmt: skip
    threads = [ThreadStat(1, "mc-worker", 90, 85, 5, 0, 0, 10)]
    cpu = decide(Profile(stacks={stripped: 100}), threads, 10, 2)[0]
    assert cpu.kind == "cpu"
    assert cpu.headline.startswith(
        "CPU-bound in code of module memcached that perf could not name (100% of on-CPU "
        "samples; the file has no symbols: its debug symbols, the distribution's -dbgsym or "
        "-debuginfo package, or a build with -g name the function)"
    ), cpu.headline
    jit = ("java", (Frame("[perf-26086.map]", "/tmp/perf-26086.map"),))
    cpu = decide(Profile(stacks={jit: 100}), threads, 10, 2)[0]
    assert cpu.headline.startswith("CPU-bound in function [perf-26086.map]"), cpu.headline


def test_a_thread_of_several_processes_is_named_with_its_pid() -> None:
    """nginx's two workers are both 'nginx': the verdict said 'most of all nginx (76% of the
    window)' and 'busiest thread nginx at 21% of a CPU', not which worker."""
    from hone.diagnose.fold import Frame
    from hone.diagnose.profile import Profile
    from hone.diagnose.threads import ThreadStat
    from hone.diagnose.verdict import decide

    work = Profile(stacks={("nginx", (Frame("ngx_http_process_request", "/usr/sbin/nginx"),)): 9})
    workers = [ThreadStat(11, "nginx", 21, 5, 16, 75, 0, 4, pid=11),
               ThreadStat(12, "nginx", 19, 4, 15, 76, 0, 5, pid=12),
               ThreadStat(10, "nginx", 0, 0, 0, 0, 0, 100, pid=10)]  # fmt: skip
    findings = {f.kind: f.headline for f in decide(work, workers, 6, 2)}
    assert "most of all nginx in pid 12 (76% of the window)" in findings["runqueue"]
    assert "busiest thread nginx in pid 11 at 21% of a CPU" in findings["cpu"]
    alone = {f.kind: f.headline for f in decide(work, workers[:1], 6, 2)}
    assert "busiest thread nginx at 21% of a CPU" in alone["cpu"]  # one process: no pid


def test_a_process_that_did_not_run_does_not_call_for_pids() -> None:
    """A wrapper's `sleep` beside the JVM it exec'd made every Kafka thread 'in pid N'."""
    from hone.diagnose.fold import Frame
    from hone.diagnose.profile import Profile
    from hone.diagnose.threads import ThreadStat
    from hone.diagnose.verdict import decide

    work = Profile(stacks={("main", (Frame("run", "/usr/bin/app"),)): 9})
    threads = [ThreadStat(21, "main", 21, 20, 1, 30, 0, 49, pid=20),
               ThreadStat(31, "sleep", 0, 0, 0, 0, 0, 100, pid=30)]  # fmt: skip
    cpu = next(f for f in decide(work, threads, 6, 2) if f.kind == "cpu")
    assert "busiest thread main at 21% of a CPU" in cpu.headline
