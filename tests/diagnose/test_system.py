"""`hone diagnose --system`: two real CPU-bound programs of different weights, found among the
machine's processes by pid, busier first, the same facts in the terminal, --json and the report;
a program in step with perf's ticks sized by the kernel's count; and the verdict's rules and the
table's sizes on readings built by hand."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from benchmarks.diagnose.inputs import build
from hone.diagnose import system
from hone.diagnose.cputime import TICK, Snapshot, Times, parse_stat
from hone.diagnose.document import document
from hone.diagnose.fold import Frame
from hone.diagnose.machine import (
    KERNEL,
    SAMPLES,
    Machine,
    Process,
    ThreadShare,
    root_of,
    terminal_lines,
    without,
)
from hone.diagnose.machine import processes as process_table
from hone.diagnose.perf_record import command_of
from hone.diagnose.probe import probe
from hone.diagnose.profile import Profile
from hone.diagnose.report import Diagnosis
from hone.diagnose.system import decide

#: 5 % of one CPU: 0.5 ms busy in light_work, then asleep 9.5 ms on average, drawn at random so
#: that perf samples it too (its hottest function, its user/kernel split); a loop in step with
#: perf's ticks is IN_STEP's test.
LIGHT = """
import random
import time
def light_work(until):
    while time.perf_counter() < until:
        pass
end = time.monotonic() + float(__import__("sys").argv[1])
while time.monotonic() < end:
    light_work(time.perf_counter() + 0.0005)
    time.sleep(random.uniform(0.0045, 0.0145))
"""

#: A loop held to 99 Hz, in step with perf's ticks (cpu-clock at 99 Hz, 10.10 ms apart): 0.5 ms
#: busy at each of its deadlines 1/99 s apart. Sized by its samples it got 0, 0, 1, 2, 0 and 0
#: samples in six 4 s windows while the kernel counted 3.2-3.4 % of a CPU for it.
IN_STEP = """
import sys
import time
def tick_work(until):
    while time.perf_counter() < until:
        pass
deadline = time.monotonic()
end = deadline + float(sys.argv[1])
while deadline < end:
    tick_work(time.perf_counter() + 0.0005)
    deadline += 1 / 99
    time.sleep(max(0.0, deadline - time.monotonic()))
"""


def _row(stdout: str, pid: int) -> str:
    rows = [line for line in stdout.splitlines() if re.match(rf"\s+{pid} ", line)]
    assert len(rows) == 1, stdout
    return rows[0]


def _on_cpu_s(pid: int) -> float:
    """The kernel's count of the seconds a (one-threaded) process has run on a CPU: exact, where
    perf's share is sampled."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9


@pytest.mark.slow
def test_the_busier_program_comes_first_with_its_pid(hone_cli, start, tmp_path: Path) -> None:
    # Each in a session of its own (`start`): with autogroup scheduling
    # (kernel.sched_autogroup_enabled) a session shares the CPUs equally with the others, so on
    # a machine busy with other work the two programs get their own share, not a part of the
    # test runner's.
    heavy = start([str(build("spinners", tmp_path)), "2", "30"], 0)
    light = start([sys.executable, "-c", LIGHT, "30"], 0.5)
    folder = tmp_path / "rep"
    ran, since = _on_cpu_s(light.pid), time.monotonic()
    done = hone_cli("diagnose", "--system", "-d", "4", "-o", str(folder))
    ran = 100 * (_on_cpu_s(light.pid) - ran) / (time.monotonic() - since)  # % of a CPU
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.endswith("\n") and "\r" not in out  # whole lines through the pipe
    heavy_row = _row(out, heavy.pid)
    assert "spinners 2 30" in heavy_row and "spinners/" in heavy_row
    heavy_cpu = float(re.search(r" (\d+\.\d) +\d+\.\d +\d+\.\d  ", heavy_row)[1])
    d = Diagnosis.load(folder / "diagnosis.hone")
    assert d.system is not None and d.language == "system" and 3.5 < d.window_s < 5
    table = {p.pid: p for p in d.system.processes}
    assert ran > 2, f"the light program ran {ran:.1f}% of a CPU by the kernel's count, not 5"
    assert light.pid in table, f"the light program ran {ran:.1f}% of a CPU and has no samples"
    # the table's size is the kernel's count too, over the sampled window (perf's start-up
    # and end are outside it, inside `ran`'s)
    assert table[light.pid].source == KERNEL
    assert ran / 1.5 < table[light.pid].cpu_pct < ran * 1.5
    assert table[heavy.pid].cpu_pct > table[light.pid].cpu_pct
    order = [p.pid for p in d.system.processes]
    assert order.index(heavy.pid) < order.index(light.pid)  # busier first
    if order.index(light.pid) < 10:  # the terminal shows ten; elsewhere --json has them all
        assert out.index(heavy_row) < out.index(_row(out, light.pid))
    assert table[heavy.pid].cpu_pct == pytest.approx(heavy_cpu, abs=0.1)
    assert len(table[heavy.pid].threads) == 2  # both of its threads, each sampled
    assert table[heavy.pid].hottest == "spin_work (spinners)"
    assert (
        table[light.pid].command.startswith("python") and "light_work" in table[light.pid].command
    )
    # The verdict names the machine's busiest process and how to drill into it.
    top = d.system.processes[0]
    verdict = next(line for line in out.splitlines() if line.startswith("verdict: "))
    assert f"{top.command} (pid {top.pid})" in verdict
    assert verdict.endswith(f"drill in: hone diagnose --pid {top.pid}")
    assert sum(d.system.split.values()) == pytest.approx(100, abs=0.5)
    assert re.search(r"^CPU time \(% of \d+ CPUs\): user [\d.]+, ", out, re.M)
    assert "spin_work" in (folder / "oncpu.folded").read_text()
    assert f"spinners-{heavy.pid};" in (folder / "oncpu.folded").read_text()
    assert not [root for root, _ in d.profile.stacks if root.endswith("-0")]  # idle is not work
    page = (folder / "report.html").read_text()
    assert "Processes" in page and f"hone diagnose --pid {heavy.pid}" in page
    # --json of the saved run: the same facts, the process table added to the usual shape.
    shown = hone_cli("diagnose", "--from", str(folder), "--json")
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert {"findings", "functions", "modules", "summary", "threads"} <= set(data)
    pids = [p["pid"] for p in data["system"]["processes"]]
    assert pids.index(heavy.pid) < pids.index(light.pid)
    assert data["findings"][0]["headline"] == verdict.removeprefix("verdict: ")
    assert data["system"]["processes"][pids.index(heavy.pid)]["cpu_pct"] == table[heavy.pid].cpu_pct
    assert any(f["name"] == "spin_work" for f in data["functions"]["self"])
    again = hone_cli("diagnose", "--compare", str(folder), str(folder))
    assert again.returncode == 0, again.stderr
    assert "CPUs busy: " in again.stdout and "processes whose CPU % moved most:" in again.stdout


@pytest.mark.slow
def test_a_program_in_step_with_the_ticks_is_sized_by_the_kernels_count(tmp_path: Path) -> None:
    """perf samples the loop in bursts or not at all; the table has it, in every window, at the
    share of a CPU the kernel counted for it."""
    loop = _detached([sys.executable, "-c", IN_STEP, "60"], 0.5)
    try:
        caps = probe()
        for window in range(3):  # sized by samples it was absent from 4 of 5 such windows
            ran, since = _on_cpu_s(loop), time.monotonic()
            d = system.collect(2.0, caps=copy.deepcopy(caps), keep=tmp_path / str(window))
            ran = 100 * (_on_cpu_s(loop) - ran) / (time.monotonic() - since)  # % of a CPU
            assert d.system is not None
            table = {p.pid: p for p in d.system.processes}
            assert loop in table, f"window {window}: {ran:.1f}% of a CPU, not in the table"
            row = table[loop]
            assert row.source == KERNEL and row.threads[0].source == KERNEL
            assert ran / 1.5 < row.cpu_pct < ran * 1.5, (window, row, ran)
    finally:
        os.kill(loop, signal.SIGKILL)


def _detached(argv: list[str], settle: float) -> int:
    """Start a program that is not a child of this process, and give it `settle` seconds: what
    the process that runs `system.collect` started is hone's own, left out of the table."""
    shell = ["sh", "-c", 'setsid "$@" </dev/null >/dev/null 2>&1 & echo $!', "sh", *argv]
    pid = int(subprocess.run(shell, capture_output=True, text=True, check=True).stdout)
    time.sleep(settle)
    return pid


#: Half a second of CPU time or so, in user code, then the program ends.
BRIEF = """
for _ in range(12_000_000):
    pass
"""


def _window_opened(seconds: float, hone: int | None = None) -> int | None:
    """The pid of the perf whose `sleep` (the window, module record) ran within `seconds`: the
    child of a perf that `hone` (this test's process by default) started, once it is `sleep`
    (perf has then enabled its events; before, perf is reading every process's mappings)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for child in Path(f"/proc/{hone or os.getpid()}/task").glob("*/children"):
            try:
                kids = child.read_text().split()
            except OSError:  # a thread that ended since the listing
                continue
            for perf in kids:
                if command_of(int(perf)):
                    return int(perf)
        time.sleep(0.01)
    return None


@pytest.mark.slow
def test_a_program_that_ends_inside_the_window_is_sized_by_its_samples(
    hone_home: Path, tmp_path: Path
) -> None:
    """Started once the window is open, it has ended when the window closes: it cannot be read
    at the end, so its share is its samples', marked so, and the CPU time it took. hone runs
    in a process of its own: what its process starts is hone's, not the machine's."""
    folder = tmp_path / "rep"
    argv = [sys.executable, "-m", "hone", "diagnose", "--system", "-d", "3", "-o", str(folder)]
    hone = subprocess.Popen(argv, env={**os.environ, "HONE_HOME": str(hone_home)})
    try:
        assert _window_opened(60, hone.pid), "perf's sleep did not start"
        brief = subprocess.Popen(["setsid", sys.executable, "-c", BRIEF])
        _, status, usage = os.wait4(brief.pid, 0)  # its CPU time, exact
        brief.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        assert hone.wait(120) == 0
    finally:
        hone.kill()
        hone.wait()
    d = Diagnosis.load(folder / "diagnosis.hone")
    assert brief.returncode == 0
    took = 100 * (usage.ru_utime + usage.ru_stime) / d.window_s  # % of a CPU over the window
    assert d.system is not None
    row = next(p for p in d.system.processes if p.pid == brief.pid)
    # not read at the window's end (it had ended), so sized by its samples
    assert row.source == SAMPLES and row.samples and row.threads[0].source == SAMPLES
    assert took / 1.5 < row.cpu_pct < took * 1.5, (row, took)


def _hash_until(stop: threading.Event) -> None:
    """Busy work for this process: sha256 lets go of the GIL while it hashes, so the thread
    runs beside the one that watches perf's `sleep`."""
    data = b"x" * 20_000_000
    while not stop.is_set():
        hashlib.sha256(data).digest()


@pytest.mark.slow
def test_hones_own_processes_are_its_cost_not_the_machines(tmp_path: Path) -> None:
    """hone's process (this test's, kept busy), the perf it runs and any helper are left out of
    the table, the verdict, the flame graph and the CPU split, and shown on a line of their own:
    on a quiet machine hone's own perf was the busiest process."""
    stop = threading.Event()
    worker = threading.Thread(target=_hash_until, args=(stop,))
    worker.start()
    try:
        with ThreadPoolExecutor(1) as pool:
            run = pool.submit(system.collect, 2.0, keep=tmp_path / "rep")
            perf = _window_opened(60)
            sleep = command_of(perf) if perf else None  # perf's child, the window
            d = run.result()
    finally:
        stop.set()
        worker.join()
    m = d.system
    assert m is not None and perf
    own = {p.pid: p for p in m.hone}
    assert os.getpid() in own and own[os.getpid()].cpu_pct > 20, m.hone
    # the recorder hone ran, a child of its process, is hone's (when it ran a clock tick)
    assert set(own) <= {os.getpid(), perf, sleep}, m.hone
    assert not {os.getpid(), perf} & {p.pid for p in m.processes}
    assert not [root for root, _ in d.profile.stacks if root_of(f"{root}/0")[1] in own]
    assert not any(f"(pid {pid})" in f.headline for f in d.findings for pid in own)
    # hone's time is counted idle: the split is the machine's without it
    assert m.split["idle"] + m.split["iowait"] >= m.hone_pct / m.cpus - 0.5, (m.split, m.hone_pct)
    assert sum(m.split.values()) == pytest.approx(100, abs=0.5)
    last = terminal_lines(m)[-1]
    assert last.startswith(f"hone itself, left out of the figures above: {m.hone_pct:.1f}% of a ")
    assert f"(pid {os.getpid()}) {own[os.getpid()].cpu_pct:.1f}" in last
    shown = json.loads(json.dumps(document(d)))["system"]
    assert shown["hone_cpu_pct"] == m.hone_pct > 20
    assert os.getpid() in {p["pid"] for p in shown["hone"]}
    assert Machine.from_dict(m.to_dict()) == m


def test_all_of_hones_time_goes_to_idle_when_its_samples_say_kernel_more_than_the_ticks() -> None:
    """hone's user/kernel split is its samples', the machine's the kernel's ticks: with more of
    hone in the kernel than the machine's whole system share, the rest comes out of user, and
    idle gains all of hone's time."""
    hone = Process(1, "python3", "python3", cpu_pct=74.0, kernel_pct=6.0, samples=0)
    split = {"user": 98.0, "system": 1.0, "idle": 1.0, "iowait": 0.0}
    out = without(split, [hone], 2)
    assert out == {"user": 62.0, "system": 0.0, "idle": 38.0, "iowait": 0.0}
    busy = {"user": 60.0, "system": 10.0, "idle": 30.0, "iowait": 0.0}  # room in each
    assert without(busy, [hone], 2) == {"user": 26.0, "system": 7.0, "idle": 67.0, "iowait": 0.0}


def _stacks(*rows: tuple[int, int, int]) -> dict:
    """perf's samples as `processes` takes them: (pid, tid, samples) on CPU in `work (app)`."""
    return {(f"app-{pid}/{tid}", (Frame("main", "/opt/app"), Frame("work", "/opt/app"))): n
            for pid, tid, n in rows}  # fmt: skip


def _times(start: int, ticks: int, comm: str = "app") -> Times:
    return Times(comm, start, ticks, 0)


def test_the_table_is_sized_by_the_kernels_count_and_by_samples_where_it_is_missing() -> None:
    """Readings of both ends in clock ticks, built by hand (pids above the kernel's limit,
    4194304: none is on the machine)."""
    counted, unsampled, ended, born, reused, asleep, missed = range(5_000_001, 5_000_008)
    half = TICK // 2  # 25 % of a CPU over the 2 s window
    before = Snapshot(100.0, 10_000)
    after = Snapshot(102.0, 10_000 + 2 * TICK)
    for pid, then, now in [(counted, 5, 5 + half), (unsampled, 5, 5 + TICK // 5),
                           (asleep, 5, 5), (ended, 5, None), (born, None, half),
                           (reused, 5, None)]:  # fmt: skip
        if then is not None:
            before.processes[pid] = _times(1, then)
            before.threads[pid] = {pid: _times(1, then)}
        if now is not None:
            after.processes[pid] = _times(1 if then is not None else 10_050, now)
            after.threads[pid] = {pid: after.processes[pid]}
    after.processes[reused] = _times(10_100, TICK // 10)  # started inside, on a reused pid
    after.threads[reused] = {reused: after.processes[reused]}
    after.processes[missed] = _times(1, 7 * TICK)  # running before the window: its base unknown
    after.threads[missed] = {missed: after.processes[missed]}
    # 99 Hz for 2 s: a sample is 0.505 % of a CPU; the counted one's samples are far too few
    stacks = _stacks((counted, counted, 3), (ended, ended, 20), (ended, 5_000_100, 10))
    table = {p.pid: p for p in process_table(stacks, 99, 2.0, before, after)}
    assert set(table) == {counted, unsampled, ended, born, reused}
    assert table[counted].cpu_pct == 25.0 and table[counted].source == KERNEL
    assert table[counted].samples == 3 and table[counted].hottest == "work (app)"
    assert table[unsampled].cpu_pct == 10.0 and table[unsampled].samples == 0
    assert table[born].cpu_pct == 25.0  # from 0 at its start
    assert table[reused].cpu_pct == 5.0  # another process on the pid: from 0 too
    assert table[ended].source == SAMPLES and table[ended].cpu_pct == pytest.approx(15.2, abs=0.1)
    assert [t.source for t in table[ended].threads] == [SAMPLES, SAMPLES]
    assert [p.pid for p in process_table(stacks, 99, 2.0, before, after)] == [
        counted, born, ended, unsampled, reused
    ]  # fmt: skip
    lines = terminal_lines(Machine(2, {"idle": 50.0}, None, list(table.values())))
    assert re.search(rf"^ +{ended} app +15\.2\*  +15\.2 +0\.0  app/{ended} 10\*", "\n".join(lines),
                     re.M)  # fmt: skip
    assert re.search(rf"^ +{counted} app +25\.0  +25\.0 ", "\n".join(lines), re.M)
    assert lines[-1].startswith("  * sized by on-CPU samples, not by the kernel's count")


def test_a_table_saved_without_sources_loads_as_sized_by_samples() -> None:
    """Diagnoses saved before the kernel's count sized the table have no `source`: their
    figures were the samples'."""
    row = {"pid": 7, "comm": "app", "command": "app", "cpu_pct": 5.0, "kernel_pct": 1.0,
           "samples": 10, "hottest": "work (app)",
           "threads": [{"tid": 7, "comm": "app", "cpu_pct": 5.0}]}  # fmt: skip
    m = Machine.from_dict({"cpus": 2, "split": {"idle": 90.0}, "pressure": None,
                           "processes": [row]})  # fmt: skip
    assert m.processes[0].source == SAMPLES and m.processes[0].threads[0].source == SAMPLES
    again = Machine.from_dict(m.to_dict())
    assert again == m


def test_stat_names_with_parentheses_and_spaces() -> None:
    line = "42 (a (b) c) S 1 42 42 0 -1 4194560 1 0 0 0 17 3 0 0 20 0 1 0 555 1 1 1"
    assert parse_stat(line) == Times("a (b) c", 555, 17, 3, parent=1)


def _machine(*processes: tuple[int, str, float, float], idle: float = 10.0) -> Machine:
    table = [
        Process(pid, cmd, cmd, cpu, kernel, int(cpu), "work (app)", [ThreadShare(pid, cmd, cpu)])
        for pid, cmd, cpu, kernel in processes
    ]
    split = {"user": (100 - idle) * 0.8, "system": (100 - idle) * 0.2, "idle": idle}
    return Machine(2, split, 0.02, table)


def test_the_verdict_names_the_busiest_process_and_the_command_to_drill_in() -> None:
    profile = Profile.from_folded({"app-7;main;work": 150, "db-9;main;query": 30})
    found = decide(profile, _machine((7, "app -c x", 150.0, 5.0), (9, "db", 30.0, 10.0)))
    assert found[0].kind == "process"
    assert found[0].headline.startswith("Busiest process: app -c x (pid 7) at 150% of a CPU")
    assert found[0].headline.endswith("drill in: hone diagnose --pid 7")
    assert found[0].details == ["db (pid 9): 30.0% of a CPU; hone diagnose --pid 9"]
    assert not any(f.kind == "runqueue" for f in found)  # 2 % pressure: under 0.05


def test_the_kernel_is_a_finding_where_it_holds_the_machine() -> None:
    folded = {"nginx-5;main;__x64_sys_writev;tcp_sendmsg": 80, "app-7;main;work": 20}
    profile = Profile.from_folded(folded)
    profile.stacks = {
        (t, tuple(f._replace(module="[kernel.kallsyms]") if f.function not in ("main", "work")
                  else f for f in frames)): n
        for (t, frames), n in profile.stacks.items()
    }  # fmt: skip
    found = decide(profile, _machine((5, "nginx", 80.0, 78.0), (7, "app", 20.0, 0.0)))
    assert [f.kind for f in found][:2] == ["process", "kernel-network"]
    assert "network stack: 80% of on-CPU samples" in found[1].headline


def test_the_idle_task_is_not_in_the_profile() -> None:
    """perf -a samples the idle task (swapper, pid 0) on idle CPUs: its halt was the machine's
    hottest function and made 'CPU time in other kernel work: 49%' a finding."""
    halt = (Frame("common_startup_64", "[kernel.kallsyms]"),
            Frame("pv_native_safe_halt", "[kernel.kallsyms]"))  # fmt: skip
    busy = (Frame("main", "/opt/cpu"), Frame("crunch", "/opt/cpu"))
    stacks = {("swapper-0/0", halt): 49, ("cpu-12/12", busy): 51}
    assert system._per_process(stacks) == {("cpu-12", busy): 51}


def test_an_idle_machine_says_so() -> None:
    found = decide(Profile(stacks={}), _machine((7, "app", 1.0, 0.0), idle=97.0))
    assert [f.kind for f in found] == ["idle"]
    assert found[0].headline == "Mostly idle: 0.06 of 2 CPUs busy (user 2%, idle 97%)"


def test_a_long_argument_is_cut_in_a_process_description(start) -> None:
    """A `python -c` script of 2,000 characters was one argument, kept whole: every row of the
    process table was padded to its width."""
    import sys

    from hone.diagnose.machine import describe

    script = "import time; time.sleep(30)  # " + "x" * 2000
    program = start([sys.executable, "-c", script], 0.1)
    said = describe(program.pid)
    assert said.startswith(f"pid {program.pid} (") and "-c 'import time; time.sleep(30)" in said
    assert len(said) < 150, said
