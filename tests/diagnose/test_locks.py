"""Lock waits: two real threads contending on one mutex, named by its symbol."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from benchmarks.diagnose.inputs import build
from hone.diagnose import locks, offcpu, window

SCRIPT = """\
app 10/11 50.000000: syscalls:sys_enter_futex: uaddr: 0x5000, op: 0x00000080, val: 0x00000002, \
utime: 0x00000000, uaddr2: 0x00000000, val3: 0x00000000
\t           8612b __GI___lll_lock_wait (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t           11d9 contend (/opt/app)

app 10/12 50.001000: syscalls:sys_enter_futex: uaddr: 0x6000, op: 0x00000089, val: 0x00000000, \
utime: 0x00000000, uaddr2: 0x00000000, val3: 0xffffffff
\t           8a000 __futex_abstimed_wait_common (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t           8b000 pthread_cond_wait@@GLIBC_2.3.2 (/usr/lib/x86_64-linux-gnu/libc.so.6)

app 10/11 50.004000:  syscalls:sys_exit_futex: 0x0
\t           8612b __GI___lll_lock_wait (/usr/lib/x86_64-linux-gnu/libc.so.6)

app 10/12 50.009000:  syscalls:sys_exit_futex: 0x0
\t           8b000 pthread_cond_wait@@GLIBC_2.3.2 (/usr/lib/x86_64-linux-gnu/libc.so.6)

app 10/11 50.010000: lock:contention_begin: 0xffff888627d2ba80 (flags=SPIN)
\tffffffff8100 __pv_queued_spin_lock_slowpath ([kernel.kallsyms])
\tffffffff8200 _raw_spin_lock ([kernel.kallsyms])
\tffffffff8300 try_to_wake_up ([kernel.kallsyms])

app 10/11 50.010500: lock:contention_end: 0xffff888627d2ba80 (ret=0)
"""


def test_futex_and_kernel_waits_from_a_script() -> None:
    found = locks.analyse(SCRIPT)
    mutex = next(w for w in found.user if w.kind == "mutex")
    assert (mutex.address, mutex.count) == ("0x5000", 1)
    assert mutex.wait_ms == pytest.approx(4.0)
    assert mutex.site == "contend (app)"
    condition = next(w for w in found.user if w.kind == "condition")
    assert condition.wait_ms == pytest.approx(8.0)
    assert [w.lock for w in found.kernel] == ["spin lock in try_to_wake_up"]
    assert found.kernel[0].wait_ms == pytest.approx(0.5)
    assert [w.address for w in found.contended()] == ["0x5000", "0xffff888627d2ba80"]
    assert locks.Locks.from_dict(found.to_dict()) == found


@pytest.mark.slow
def test_two_threads_contending_on_one_mutex(start, tmp_path: Path) -> None:
    proc = start([str(build("lock_contend", tmp_path)), "6"], 0.3)
    symbolizer = locks.Symbolizer(proc.pid)
    data = tmp_path / "locks.data"
    argv = locks.record_argv([proc.pid], data, 1.0, kernel_locks=True)
    subprocess.run(argv, check=True, capture_output=True)
    found = locks.analyse(offcpu.script(data), symbolizer)
    top = found.contended()[0]
    assert top.lock == "counter_lock"
    assert top.kind == "mutex"
    # The two threads take turns; how long each waits depends on the load on this shared machine.
    assert top.wait_ms > 30
    assert top.count >= 10
    # The caller, when frame pointers let perf see it; never a thread entry point.
    assert top.site in ("", "contend (lock_contend)")


@pytest.mark.slow
def test_waits_are_counted_over_the_part_a_size_limit_let_perf_record(
    start, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A busy process fills a recording long before the window ends (a contended JVM wrote
    28 MB/s); perf stops at the size limit, and the waits per second are over what it recorded,
    not over the whole window (that would read as a quarter of the contention)."""
    monkeypatch.setattr(locks, "MAX_SIZE", "128K")
    monkeypatch.setattr(offcpu, "MAX_SIZE", "128K")
    proc = start([str(build("lock_contend", tmp_path)), "8"], 0.3)
    d = window.collect(proc.pid, 3.0)
    assert d.locks is not None and d.locks.capped and d.offcpu is not None and d.offcpu.capped
    assert 0 < d.locks.window_s < d.window_s * 0.75
    lock = next(f for f in d.findings if f.kind == "lock")
    rate = float(re.search(r"([\d.]+) thread-seconds of waiting per second", lock.headline)[1])
    top = d.locks.contended()[0]
    assert rate == pytest.approx(top.wait_ms / 1000 / d.locks.window_s, abs=0.006)
    assert any(n.startswith("locks: perf stopped its recording at 128KB after") for n in d.notes)


def test_a_wait_in_code_perf_cannot_name_has_no_site() -> None:
    """memcached (stripped) waiting on its mutex through libc without frame pointers: perf
    names the callers `[unknown] ([unknown])`, and the site read `[[unknown]] ([unknown])`."""
    script = SCRIPT.replace("\t           11d9 contend (/opt/app)\n",
                            "\t           11d9 [unknown] ([unknown])\n"
                            "\t           11e0 [unknown] ([unknown])\n")  # fmt: skip
    mutex = next(w for w in locks.analyse(script).user if w.kind == "mutex")
    assert mutex.site == ""
    assert mutex.stack == "[unknown];[unknown];__GI___lll_lock_wait"


def test_waiters_are_named_by_their_runtime_names_not_cut_at_15() -> None:
    """The recording carries the kernel's thread names, cut at 15 characters: a Kafka broker's
    lock was waited on by `C1 CompilerThre, C2 CompilerThre`, where the thread table, from
    jstack, said `C1 CompilerThread0`; two pools of one prefix could not be told apart."""
    from hone.diagnose.threads import ThreadStat

    script = SCRIPT.replace("app 10/11", "data-plane-kafk 10/11")
    found = locks.analyse(script)
    stats = [ThreadStat(11, "data-plane-kafk", 1, 1, 0, 0, 0, 98,
                        name="data-plane-kafka-request-handler-1"),
             ThreadStat(12, "app", 1, 1, 0, 0, 0, 98)]  # fmt: skip
    locks.name_waiters(found, stats)
    mutex = next(w for w in found.user if w.kind == "mutex")
    assert mutex.waiters == ["data-plane-kafka-request-handler-1"]
    assert found.kernel[0].waiters == ["data-plane-kafka-request-handler-1"]
    condition = next(w for w in found.user if w.kind == "condition")
    assert condition.waiters == ["app"]  # no name of its own: the kernel's
    assert "threads" not in found.to_dict()["user"][0]
    assert locks.Locks.from_dict(found.to_dict()) == found
