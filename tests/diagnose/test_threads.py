"""Hot threads: parsing of jstack and py-spy output, and the sampler on a real process."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from hone.diagnose.threads import ThreadSampler, parse_jstack, parse_py_spy

PROGRAMS = Path(__file__).parent / "programs"

JSTACK = """"main" #1 prio=5 os_prio=0 cpu=40.12ms elapsed=2.03s tid=0x00007f nid=0x1a2b waiting
   java.lang.Thread.State: TIMED_WAITING (sleeping)
\tat java.lang.Thread.sleep(java.base@17.0.15/Native Method)
\tat BusyWorker.main(BusyWorker.java:39)

"hot-worker" #14 prio=5 os_prio=0 cpu=1990ms elapsed=2.0s tid=0x00007f nid=6700 runnable
\tat BusyWorker.spin(BusyWorker.java:8)
"""

PY_SPY = """Process 7243: python3 t.py
Python v3.11.7 (/usr/bin/python3.11)

Thread 7243 (idle): "MainThread"
    <module> (t.py:9)
Thread 7285 (active+gil): "hot-spinner"
    spin (t.py:4)
    Thread.run (threading.py:982)
"""


def test_parse_jstack_hex_and_decimal_nid() -> None:
    threads = parse_jstack(JSTACK)
    assert threads[0x1A2B][0] == "main"
    assert threads[0x1A2B][1][-1] == "BusyWorker.main(BusyWorker.java:39)"
    assert threads[6700] == ("hot-worker", ["BusyWorker.spin(BusyWorker.java:8)"])


def test_parse_py_spy() -> None:
    threads = parse_py_spy(PY_SPY)
    assert threads[7243][0] == "MainThread"
    assert threads[7285] == ("hot-spinner", ["spin (t.py:4)", "Thread.run (threading.py:982)"])


def sample(argv: list[str], settle: float, window: float) -> tuple[int, ThreadSampler]:
    """The threads of a program started for the test, sampled for `window` seconds from `settle`
    seconds after its start; its pid and the stopped sampler."""
    proc = subprocess.Popen(argv)
    try:
        time.sleep(settle)
        sampler = ThreadSampler([proc.pid]).start()
        time.sleep(window)
        sampler.stop()
        return proc.pid, sampler
    finally:
        proc.kill()
        proc.wait()


def test_sampler_finds_the_busy_thread() -> None:
    _, sampler = sample([sys.executable, str(PROGRAMS / "spin_threads.py"), "20"], 0.5, 1.0)
    assert len(sampler.first) == 5  # the threads when sampling started
    stats = sampler.stats()
    assert 0.9 < sampler.elapsed < 3
    busiest = stats[0]
    # Runnable the whole window: on the CPU or waiting for one (the machine is shared).
    assert busiest.cpu_pct + busiest.runq_pct > 80
    # On the CPU for what the machine gave it (5-11 % at a load of 10 on 2 CPUs, all of one on a
    # quiet machine): far more than the idle threads together, and as much as the kernel's tick
    # accounting says, so no run-queue time is counted as CPU time.
    idle = [t for t in stats if t.tid != busiest.tid]
    assert busiest.cpu_pct > max(1.0, 10 * sum(t.cpu_pct for t in idle))
    assert busiest.cpu_pct == pytest.approx(busiest.user_pct + busiest.sys_pct, abs=5)
    assert all(t.cpu_pct < 5 for t in idle)
    for t in stats:
        assert abs(t.cpu_pct + t.runq_pct + t.io_pct + t.sleep_pct - 100) < 0.1


def test_a_thread_born_mid_window_is_not_counted_asleep_before_it_existed() -> None:
    code = (
        "import threading, time\n"
        "time.sleep(0.6)\n"
        "threading.Thread(target=time.sleep, args=(30,), name='late').start()\n"
        "time.sleep(30)\n"
    )
    pid, sampler = sample([sys.executable, "-c", code], 0.1, 1.2)
    late = [t for t in sampler.stats() if t.tid != pid]
    assert len(late) == 1
    total = late[0].cpu_pct + late[0].runq_pct + late[0].io_pct + late[0].sleep_pct
    # Born about half-way through the 1.2 s window.
    assert 25 < total < 80


def test_a_process_that_exited_is_not_counted_asleep_after_its_exit() -> None:
    """A program that computes until it exits, sampled from its start until a second after:
    it is a zombie then (not reaped), off the CPU but not asleep."""
    code = "import time\nend = time.process_time() + 0.2\nwhile time.process_time() < end: pass\n"
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        sampler = ThreadSampler([proc.pid]).start()
        while Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            time.sleep(0.02)
        time.sleep(1.0)
        (stat,) = sampler.stop()
    finally:
        proc.wait()
    assert stat.cpu_pct > 0
    # the second after the exit is most of the window, and no sleep
    assert stat.sleep_pct + stat.io_pct < 10


def test_parse_py_spy_raw_names_each_process_of_several() -> None:
    from hone.diagnose.threads import parse_py_spy_raw, py_spy_processes

    parent = 'process 20:"python3 server.py --mode a;b"'  # a command line may hold ';'
    text = (
        f'{parent};process 31:"python3 server.py";thread (31): MainThread;crunch (w.py:4) 5\n'
        f'{parent};process 32:"python3 server.py";thread (32): MainThread;crunch (w.py:5) 7\n'
        f"{parent};thread (20): MainThread;wait (server.py:9) 1\n"
    )
    assert parse_py_spy_raw(text) == {
        ("MainThread-31", (("crunch", "w.py"),)): 5,
        ("MainThread-32", (("crunch", "w.py"),)): 7,
        ("MainThread-20", (("wait", "server.py"),)): 1,
    }
    one = 'process 20:"python3 app.py";thread (21): hot;spin (app.py:3) 4\n'
    assert parse_py_spy_raw(one) == {("hot", (("spin", "app.py"),)): 4}
    assert py_spy_processes(text) == {20, 31, 32} and py_spy_processes(one) == {20}


def test_parse_py_spy_raw_drops_line_numbers() -> None:
    from hone.diagnose.threads import parse_py_spy_raw

    text = (
        "thread (15324): hot-spinner;Thread.run (threading.py:982);spin (spin_threads.py:12) 3\n"
        "thread (15324): hot-spinner;Thread.run (threading.py:982);spin (spin_threads.py:13) 194\n"
        "thread (15300): MainThread;<module> (app.py:9) 1\n"
    )
    stacks = parse_py_spy_raw(text)
    assert stacks == {
        ("hot-spinner", (("Thread.run", "threading.py"), ("spin", "spin_threads.py"))): 197,
        ("MainThread", (("<module>", "app.py"),)): 1,
    }


def test_a_process_is_described_as_it_is_at_the_windows_end(start) -> None:
    """A wrapper that execs its program (kafka-server-start.sh, `sh -c '...; exec java ...'`)
    was described as first seen: every Kafka thread of the hot-thread table said
    `pid N (sh -c 'sleep 0.8; exec java ...')`."""
    import time

    from hone.diagnose.threads import ThreadSampler

    wrapper = start(["sh", "-c", "sleep 0.2; exec sleep 9.25"], 0)
    sampler = ThreadSampler([wrapper.pid]).start()
    assert sampler.processes[wrapper.pid].startswith(f"pid {wrapper.pid} (sh -c")
    time.sleep(0.6)
    stats = sampler.stop()
    assert {t.process for t in stats if t.pid == wrapper.pid} == {f"pid {wrapper.pid} (sleep 9.25)"}
