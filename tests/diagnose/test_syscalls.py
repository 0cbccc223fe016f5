"""The system-call rate beside the kernel's time: counted by perf stat (raw_syscalls:sys_enter),
split into writes, reads and other calls by /proc/PID/io, checked against the calls a real
program says it made."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.diagnose.inputs import build
from hone.diagnose import syscalls
from hone.diagnose.report import Diagnosis


@pytest.mark.slow
@pytest.mark.parametrize(("mode", "kind"), [("write", "writes"), ("getppid", "other calls")])
def test_the_rate_of_tiny_calls_is_counted(hone_cli, tmp_path: Path, mode: str, kind: str) -> None:
    """sys_loop prints how many calls its loop made; hone holds it until the window starts
    and the window ends with it, so the count is those calls (and a few of its start and
    exit)."""
    program = build("sys_loop")
    folder = tmp_path / "rep"
    done = hone_cli("diagnose", "-F", "99", "-d", "20", "--no-offcpu", "--no-locks", "--json",
                    "-o", str(folder), "--", str(program), mode, "1.5")  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = next(line for line in done.stderr.splitlines() if line.endswith(" calls"))
    made = int(said.split()[0])
    body = json.loads(done.stdout)
    calls = body["syscalls"]
    assert made * 0.97 <= calls["calls"] <= made * 1.03 + 100, (made, calls)
    assert calls["seconds"] == pytest.approx(body["window_s"], abs=0.01)
    assert calls["per_second"] == pytest.approx(calls["calls"] / calls["seconds"], rel=0.01)
    if kind == "writes":
        assert calls["writes"] >= 0.95 * calls["calls"], calls
    else:
        assert calls["writes"] + calls["reads"] <= 0.01 * calls["calls"], calls
    assert f", mostly {kind} (" in calls["verdict"], calls["verdict"]
    assert "tracepoint raw_syscalls:sys_enter" in [
        c["name"] for c in body["capabilities"]["items"] if c["used"]
    ]
    # beside the finding in the kernel's time, on the terminal and in the report
    part = next(f for f in body["findings"] if f["kind"] in ("kernel-files", "kernel-other"))
    assert part["details"][0] == f"system calls: {calls['verdict']}"
    text = hone_cli("diagnose", "--from", str(folder)).stdout
    assert f"system calls: {calls['verdict']}" in text
    assert calls["verdict"] in (folder / "report.html").read_text()
    assert Diagnosis.load(folder / "diagnosis.hone").syscalls.calls == calls["calls"]


def test_a_process_asleep_through_the_window_made_no_calls(tmp_path: Path) -> None:
    """perf stat says `<not counted>` for a process that never ran while it counted (a
    service's idle master): no calls, not a failed count."""
    asleep = subprocess.Popen(["sleep", "30"])
    try:
        out = tmp_path / "calls.csv"
        counted = syscalls.count(syscalls.count_argv([asleep.pid], out, 1), out, subprocess.Popen)
    finally:
        asleep.kill()
        asleep.wait()
    assert "<not counted>" in out.read_text()
    assert counted.calls == 0 and counted.seconds == pytest.approx(1, abs=0.5)


#: A parent whose child writes 5,000 times before the window and 3,000 times in it (each step
#: on a line of stdin), then is reaped: the kernel adds the child's whole count to the parent's.
REAPER = """
import os, sys, time
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    fd = os.open("/dev/null", os.O_WRONLY)
    for _ in range(5000): os.write(fd, b"x")
    print(os.getpid(), flush=True)
    os.read(r, 1)
    for _ in range(3000): os.write(fd, b"x")
    os.read(r, 1)
    os._exit(0)
for _ in range(2):
    sys.stdin.readline()
    os.write(w, b"g")
os.waitpid(pid, 0)
print("reaped", flush=True)
time.sleep(30)
"""


def test_a_reaped_child_is_counted_once_and_only_in_the_window() -> None:
    """nginx's master reaping its workers, the postmaster its backends: the parent's
    /proc/PID/io grows by the child's whole count, so summing both counted the child's calls
    twice and its calls before the window too (an nginx stopped in the window showed 134,691
    reads/s of 158,706 calls/s where it had made 20,387/s)."""
    parent = subprocess.Popen([sys.executable, "-c", REAPER], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        child = int(parent.stdout.readline())
        watch = syscalls.Watch([parent.pid, child])
        parent.stdin.write("\n")
        parent.stdin.flush()
        time.sleep(0.2)
        watch.sample()  # the child alive, its 3,000 writes made
        assert 3000 <= watch.delta()[1] <= 3010
        parent.stdin.write("\n")
        parent.stdin.flush()
        assert parent.stdout.readline() == "reaped\n"
        watch.sample()  # the child reaped: its count is in the parent's now
        assert 3000 <= watch.delta()[1] <= 3010, watch.delta()
    finally:
        parent.kill()
        parent.wait()
