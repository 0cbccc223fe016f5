"""Off-CPU time from sched_switch: a real program that sleeps and syncs writes, and the arithmetic
on a hand-checked perf script excerpt."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from benchmarks.diagnose.inputs import build
from hone.diagnose import offcpu
from hone.diagnose.perf_record import command_of
from hone.errors import HoneError

# perf script -F comm,pid,tid,time,event,trace,ip,sym,dso --show-switch-events (trimmed stacks)
SCRIPT = """\
app  10/11   100.000000: sched:sched_switch: prev_comm=app prev_pid=11 prev_prio=120 \
prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
\tffffffff821facd8 __schedule ([kernel.kallsyms])
\t           10e0 wait_for_request (/opt/app)
\t           1200 main (/opt/app)

app  10/12   100.001000: sched:sched_switch: prev_comm=app prev_pid=12 prev_prio=120 \
prev_state=R+ ==> next_comm=other next_pid=99 next_prio=120
\tffffffff821facd8 __schedule ([kernel.kallsyms])
\t           1300 compute (/opt/app)

app  10/12   100.004000: PERF_RECORD_SWITCH IN
app  10/11   100.010000: sched:sched_wakeup: comm=app pid=11 prio=120 target_cpu=000
app  10/11   100.010500: PERF_RECORD_SWITCH IN
app  10/12   100.020000: sched:sched_switch: prev_comm=app prev_pid=12 prev_prio=120 \
prev_state=D ==> next_comm=app next_pid=11 next_prio=120
\tffffffff821fb70f io_schedule ([kernel.kallsyms])
\t           fece0 fdatasync (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t           1400 [unknown] (/opt/app)

app  10/13   100.040000: sched:sched_switch: prev_comm=reader prev_pid=13 prev_prio=120 \
prev_state=D ==> next_comm=swapper/1 next_pid=0 next_prio=120
\tffffffff821fb70f io_schedule ([kernel.kallsyms])
\t           2000 read_block (/opt/app)

app  10/12   100.050000: PERF_RECORD_SWITCH IN
"""


def test_intervals_are_charged_to_the_switch_out_stack() -> None:
    result = offcpu.analyse(SCRIPT, pid=10)
    sleep = result.stacks["sleep"]
    # asleep 10 ms until its wake-up, then 0.5 ms in the run queue until it ran
    assert sleep == {"app;main;wait_for_request;__schedule": pytest.approx(10000)}
    assert result.stacks["runqueue"] == {
        "app;compute;__schedule": pytest.approx(3000),
        "app;main;wait_for_request;__schedule": pytest.approx(500),
    }
    assert result.stacks["io"] == {
        "app;[app];fdatasync;io_schedule": pytest.approx(30000),
        # Still blocked when the recording ended: charged up to the last event.
        "reader;read_block;io_schedule": pytest.approx(10000),
    }
    assert result.per_thread[12]["io"] == pytest.approx(30000)
    # Run-queue latency: preempted 3 ms; woken at 100.010 and running at 100.0105.
    assert result.runqueue.count == 2
    assert result.runqueue.max_us == pytest.approx(3000)
    assert result.runqueue.p50_us == pytest.approx(3000)
    assert sorted(result.folded()) == sorted(
        ["app;main;wait_for_request;__schedule", "app;compute;__schedule",
         "app;[app];fdatasync;io_schedule", "reader;read_block;io_schedule"]
    )  # fmt: skip
    assert offcpu.OffCpu.from_dict(result.to_dict()) == result


def test_a_frame_without_symbols_is_named_and_keyed_by_its_module() -> None:
    # `[unknown] (/opt/app)` folds as `[app]`: the module map is keyed by that folded name, as
    # every reader (flame graph, verdict, why it won) looks it up; keyed by `[unknown]`, a
    # library without symbols lost its module and `hone show` listed it twice.
    modules = offcpu.analyse(SCRIPT, pid=10).modules
    assert modules["[app]"] == "app"
    assert "[unknown]" not in modules
    assert modules["fdatasync"] == "libc.so.6"


@pytest.mark.slow
def test_real_program_off_cpu(start, tmp_path: Path) -> None:
    proc = start([str(build("wait_sleep", tmp_path)), "6", str(tmp_path / "out.bin")], 0.3)
    data = tmp_path / "sched.data"
    subprocess.run(offcpu.record_argv([proc.pid], data, 1.5), check=True, capture_output=True)
    result = offcpu.analyse(offcpu.script(data), proc.pid)
    total = result.total_us() / 1e6
    # A single thread that is almost never on the CPU: off-CPU time is most of the window.
    assert 0.7 * result.window_s < total <= result.window_s * 1.05
    top_sleep = result.top("sleep", 1)[0][0]
    # Debian's libc has no frame pointers, so the caller of clock_nanosleep may be skipped.
    assert top_sleep.startswith("wait_sleep;") and "clock_nanosleep" in top_sleep
    assert "nap_between_requests" in top_sleep or ";main;" in top_sleep
    waits = " ".join(result.stacks.get("io", {})) + " ".join(result.stacks.get("sleep", {}))
    assert "fdatasync" in waits
    assert result.per_thread and set(result.per_thread) == {proc.pid}


@pytest.mark.slow
def test_two_processes_off_cpu_each_under_a_root_of_its_own(start, tmp_path: Path) -> None:
    """A recording of two processes: each one's waits under `comm-PID`, as the on-CPU profile's
    roots; a recording of one keeps its threads' names alone."""
    program = str(build("wait_sleep", tmp_path))
    one = start([program, "6", str(tmp_path / "one.bin")], 0)
    two = start([program, "6", str(tmp_path / "two.bin")], 0.3)
    data = tmp_path / "sched.data"
    subprocess.run(offcpu.record_argv([one.pid, two.pid], data, 1), check=True,
                   capture_output=True)  # fmt: skip
    text = offcpu.script(data)
    roots = {stack.split(";")[0] for stack in offcpu.analyse(text, None, per_process=True).folded()}
    assert roots == {f"wait_sleep-{one.pid}", f"wait_sleep-{two.pid}"}
    subprocess.run(offcpu.record_argv([one.pid], data, 1), check=True, capture_output=True)
    alone = offcpu.analyse(offcpu.script(data), None, per_process=True)
    assert {stack.split(";")[0] for stack in alone.folded()} == {"wait_sleep"}
    assert any("nanosleep" in stack for stack in alone.folded())


def test_a_recording_cut_short_says_why_perf_script_failed(tmp_path: Path) -> None:
    """perf killed after it wrote its file's header: perf script's reason (the data size is 0),
    not the warnings about fields it prints before it, is the error."""
    target = subprocess.Popen(["sleep", "30"])
    data = tmp_path / "sched.data"
    perf = subprocess.Popen(offcpu.record_argv([target.pid], data, 30), stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not (data.exists() and data.stat().st_size >= 56) and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        for process in (perf, target):
            process.kill()
            process.wait()
    with pytest.raises(HoneError) as error:
        offcpu.script(data)
    assert "data size field is 0" in str(error.value), error.value
    assert "Ignoring" not in str(error.value)


@pytest.mark.slow
def test_hone_diagnose_of_a_waiting_program(hone_cli, tmp_path: Path) -> None:
    binary = build("wait_sleep", tmp_path)
    done = hone_cli(
        "diagnose", "-o", str(tmp_path / "rep"), "--no-locks", "--",
        str(binary), "2", str(tmp_path / "out.bin"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    from hone.diagnose.report import Diagnosis

    d = Diagnosis.load(tmp_path / "rep" / "diagnosis.hone")
    assert d.offcpu is not None
    # The thread is off the CPU nearly all the time: sleeping in nanosleep, syncing in fdatasync.
    assert d.offcpu.total_us() / 1e6 > 0.7 * d.window_s
    assert any("fdatasync" in s for s in d.offcpu.stacks.get("io", {}))
    assert d.findings[0].kind in ("idle", "io", "runqueue")
    # a wait in libc (the naps, the syncs) is named with the program's function it came from
    waits = [f.headline for f in d.findings if f.kind in ("idle", "io")]
    assert any("(libc.so.6) reached from " in w and "(wait_sleep)" in w for w in waits), waits
    assert d.threads[0].cpu_pct < 20
    page = (tmp_path / "rep" / "report.html").read_text()
    assert "Off-CPU time (microseconds)" in page and "fdatasync" in page


def test_wakeups_from_other_processes_give_run_queue_latency() -> None:
    # Thread 12 went to sleep at 100.020, an interrupt woke it at 100.030, it ran at 100.050.
    result = offcpu.analyse(SCRIPT, pid=10, wakeups={12: [99.0, 100.030]})
    assert result.runqueue.count == 3
    assert result.runqueue.max_us == pytest.approx(20000)
    # in D until the wake-up, then waiting for a CPU: I/O 10 ms, not 30
    assert result.stacks["io"]["app;[app];fdatasync;io_schedule"] == pytest.approx(10000)
    assert result.stacks["runqueue"]["app;[app];fdatasync;io_schedule"] == pytest.approx(20000)
    assert result.per_thread[12] == {"runqueue": pytest.approx(23000), "io": pytest.approx(10000)}
    text = " 100.030000: comm=app pid=12 prio=120 target_cpu=001\n 99.5: comm=x pid=3 prio=1\n"
    assert offcpu.parse_wakeups(text) == {12: [100.03], 3: [99.5]}


def enabled(recorder: subprocess.Popen) -> None:
    """Wait until perf record has enabled its events: it runs its command (sleep) right after.
    Its file's header comes earlier, before a system-wide recorder has read every process's
    mappings, which on a busy machine took longer than a late thread's naps."""
    deadline = time.monotonic() + 30
    while command_of(recorder.pid) is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert command_of(recorder.pid), "perf record did not start"


def test_wakeups_of_threads_born_after_the_recorder_started(tmp_path: Path) -> None:
    """A command hone starts is held before it starts its threads: the wake-up recorder, set up
    with the main thread alone, still takes its workers' wake-ups by their inherited name."""
    program = build("lock_contend", tmp_path)
    proc = subprocess.Popen([str(program), "1"], start_new_session=True)
    os.kill(proc.pid, signal.SIGSTOP)
    data = tmp_path / "wakeups.data"
    argv = offcpu.record_wakeups_argv([proc.pid], data, 30, "lock_contend")
    assert argv is not None
    recorder = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        enabled(recorder)
        os.kill(proc.pid, signal.SIGCONT)
        proc.wait(timeout=20)
    finally:
        recorder.send_signal(signal.SIGINT)
        recorder.wait(timeout=20)
    woken = offcpu.script_wakeups(data)
    assert set(woken) - {proc.pid}, woken  # the workers, born after the filter was set


@pytest.mark.parametrize("wrapped", [False, True])
def test_wakeups_of_a_thread_born_later_under_a_name_of_its_own(
    tmp_path: Path, wrapped: bool
) -> None:
    """A thread born after the recorder started that renames itself (prctl, Java's named
    threads), woken by its timers only: neither its id nor its name was known, and its
    wake-ups are still recorded, as ids handed out after the start. `wrapped`: the recorder
    starts 5 ids before pid_max and the thread's id comes after the kernel's counter wrapped.
    The program runs on CPU 0: on this project's 2-CPU test VMs perf gets no event raised while
    CPU 1 idles (a timer's wake-up there: 0 of 500 naps recorded, 500 of 500 on CPU 0)."""
    program = build("renamed_thread", tmp_path)
    data = tmp_path / "wakeups.data"
    proc = subprocess.Popen(
        [str(program)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: os.sched_setaffinity(0, {0}),
    )
    given = offcpu.last_given()
    assert given is not None
    if wrapped:
        given = (given[1] - 5, given[1])
    argv = offcpu.record_wakeups_argv([proc.pid], data, 30, "renamed_thread", given)
    assert argv is not None
    recorder = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        enabled(recorder)
        if wrapped:  # the next id handed out is 1001 (or the next one free)
            Path("/proc/sys/kernel/ns_last_pid").write_text("1000")
        out, _ = proc.communicate("\n", timeout=30)  # the thread is born now
    finally:
        recorder.send_signal(signal.SIGINT)
        recorder.wait(timeout=20)
    napper = int(out.split()[0])
    assert not wrapped or napper < given[0]
    woken = offcpu.script_wakeups(data)
    assert len(woken.get(napper, [])) > 100, sorted(woken)  # ~1000 naps of 2 ms
    # without the ids handed out later, the filter names it nowhere
    unnamed = offcpu.record_wakeups_argv([proc.pid], data, 30, "renamed_thread")
    assert unnamed is not None and "pid >" not in " ".join(unnamed)


def test_ids_handed_out_after_the_last_wrap_at_pid_max() -> None:
    argv = offcpu.record_wakeups_argv([5], Path("w"), 1, None, (1000, 4194304))
    assert argv is not None and "(pid > 1000 && pid <= 9192)" in " ".join(argv)
    argv = offcpu.record_wakeups_argv([5], Path("w"), 1, None, (30000, 32768))
    assert argv is not None and "pid > 30000 || pid < 5724" in " ".join(argv)


def test_a_frame_of_no_known_module_is_unknown_as_on_cpu() -> None:
    """Folded as stackcollapse-perf and the on-CPU folding name it, `[unknown]`, not
    `[[unknown]]` (which the flame graph did not grey as an unknown frame)."""
    script = SCRIPT.replace("1400 [unknown] (/opt/app)", "1400 [unknown] ([unknown])")
    assert "app;[unknown];fdatasync;io_schedule" in offcpu.analyse(script, pid=10).folded()
