"""Work done by child processes: a command that runs its work in a child (a shell script, fio's
job processes, a server's workers) is not "mostly idle"; the verdict names the busy child."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.diagnose.inputs import build
from hone.diagnose import descendants
from hone.diagnose.report import Diagnosis


def test_descendants_follow_the_whole_tree() -> None:
    outer = subprocess.Popen(["sh", "-c", "sh -c 'sleep 30; true'; true"])
    try:
        deadline = time.monotonic() + 5
        names: list[str] = []
        # the inner shell's child is named sh from its fork until it execs sleep
        while time.monotonic() < deadline and names != ["sh", "sleep"]:
            table = descendants.processes()
            found = descendants.descendants(outer.pid, table)
            names = sorted(table[p][1] for p in found)
            time.sleep(0.05)
        assert names == ["sh", "sleep"]
        assert outer.pid not in found
    finally:
        subprocess.run(["pkill", "-P", str(outer.pid)], check=False)
        outer.kill()
        outer.wait()


def test_a_daemon_left_right_after_the_window_began_is_followed(tmp_path: Path) -> None:
    """/proc's start times are whole ticks, rounded down: a daemon forked within the tick the
    window began in is as much the command's as one forked later. Each round leaves a marked
    daemon (`setsid -f`: its parent is init at once) just after the watch began."""
    missed = []
    for round_ in range(20):
        mark, pidfile = f"test-{round_}", tmp_path / f"d{round_}"
        holder = subprocess.Popen(["sleep", "30"])
        try:
            watch = descendants.Watch(holder.pid, mark=mark)
            subprocess.run(["setsid", "-f", "sh", "-c", f"echo $$ > {pidfile}.new; "
                            f"mv {pidfile}.new {pidfile}; exec sleep 30"],
                           env={**os.environ, descendants.MARK: mark}, check=True)  # fmt: skip
            deadline = time.monotonic() + 10
            while not pidfile.exists() and time.monotonic() < deadline:
                time.sleep(0.005)
            daemon = int(pidfile.read_text())
            watch.sample()
            os.kill(daemon, signal.SIGKILL)
        finally:
            holder.kill()
            holder.wait()
        if daemon not in watch.followed:
            missed.append(round_)
    assert missed == []


@pytest.mark.slow
def test_a_command_whose_child_does_the_work(hone_cli, tmp_path: Path) -> None:
    """perf follows what the command forks, and so do the thread counters: the child's code is
    the verdict, and no finding sends the user to --pid it."""
    hot = build("hot_split", tmp_path)
    done = hone_cli("diagnose", "-o", str(tmp_path / "rep"), "--", "sh", "-c", f"{hot} 2; true")
    assert done.returncode == 0, done.stderr
    d = Diagnosis.load(tmp_path / "rep" / "diagnosis.hone")
    # the process's own finding: beside other work a run-queue wait of the neighbours' doing
    # (not `own`) rightly comes first
    top = next(f for f in d.findings if f.own)
    assert top.kind == "cpu" and "hot_work" in top.headline, [f.headline for f in d.findings]
    assert "children" not in d.kinds
    child = d.processes[1]
    assert any(t.pid == child and t.cpu_pct > 20 for t in d.threads), d.threads
    assert list(d.profile.threads()) == ["hot_split"]  # one process sampled: no pid in roots
    assert done.stdout.startswith(f"hone diagnose: sh -c '{hot} 2; true', 2 processes for ")
    assert "Mostly idle" not in done.stdout


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def memcached_d(tmp_path: Path) -> Iterator[tuple[list[str], Path]]:
    """`memcached -d` on a free port with its pid file: the daemon is stopped after the test."""
    pidfile = tmp_path / "memcached.pid"
    argv = ["memcached", "-d", "-u", "root", "-l", "127.0.0.1", "-p", str(_free_port()),
            "-P", str(pidfile)]  # fmt: skip
    yield argv, pidfile
    if pidfile.exists():
        os.kill(int(pidfile.read_text()), signal.SIGKILL)


@pytest.mark.slow
def test_a_command_that_only_starts_a_daemon_names_it(
    hone_cli, memcached_d: tuple[list[str], Path]
) -> None:
    """`memcached -d` forks its server into a session of its own and ends at once: one line
    names the daemon it left and the command to diagnose it, not "ended too soon" alone."""
    argv, pidfile = memcached_d
    done = hone_cli("diagnose", "-d", "3", "--", *argv)
    daemon = int(pidfile.read_text())
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        "hone: memcached ended (exit code 0) at once and left a daemon running, pid "
        f"{daemon} (memcached -d -u): diagnose it with hone diagnose --pid {daemon}\n"
    )


@pytest.mark.slow
def test_a_daemon_the_command_started_is_recorded(
    hone_cli, memcached_d: tuple[list[str], Path], tmp_path: Path
) -> None:
    """A script starts `memcached -d` and loads it: the server, out of the script's tree and
    session, does the work. perf follows it (it forked from the command in the window), so its
    stacks are in the profile and no finding sends the user to --pid it; a note says hone left
    it running."""
    argv, pidfile = memcached_d
    load = f"memcaslap -s 127.0.0.1:{argv[argv.index('-p') + 1]} -t 2s -T 1 -c 8 >/dev/null"
    script = f"{' '.join(argv)} && sleep 0.3 && {load}"
    done = hone_cli("diagnose", "-d", "4", "-o", str(tmp_path / "rep"), "--", "sh", "-c", script)
    assert done.returncode == 0, done.stderr
    daemon = int(pidfile.read_text())
    d = Diagnosis.load(tmp_path / "rep" / "diagnosis.hone")
    # its threads (memcached, mc-worker, ...) under roots naming its pid
    assert daemon in d.processes and any(t.endswith(f"-{daemon}") for t in d.profile.threads())
    assert sum(t.cpu_pct for t in d.threads if t.pid == daemon) > 5, d.threads
    assert any(name.startswith("memcaslap-") for name in d.profile.threads())
    assert "children" not in d.kinds, [f.headline for f in d.findings]
    assert f"the command left a daemon running, pid {daemon} (memcached -d -u)" in "\n".join(
        d.notes
    )
    assert os.path.exists(f"/proc/{daemon}")  # still serving: hone does not stop it


def _running(pid: int) -> bool:
    """Alive and not a zombie waiting for init to reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(errors="replace")
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.slow
def test_a_shells_background_jobs_end_with_the_command(hone_cli, tmp_path: Path) -> None:
    """A non-interactive shell's background jobs ignore SIGINT: hone stopped the shell at the
    window's end and they ran on after it (and held a pipe's reader open until they ended)."""
    pids = tmp_path / "pids"
    script = (
        f"sleep 120 </dev/null >/dev/null 2>&1 & echo $! >> {pids}; "
        f"sleep 121 </dev/null >/dev/null 2>&1 & echo $! >> {pids}; wait"
    )
    done = hone_cli("diagnose", "--duration", "1.5", "--no-locks", "--no-offcpu",
                    "-o", str(tmp_path / "rep"), "--", "sh", "-c", script)  # fmt: skip
    jobs = [int(line) for line in pids.read_text().split()]
    try:
        assert done.returncode == 0, done.stderr
        assert len(jobs) == 2
        assert not [pid for pid in jobs if _running(pid)]
    finally:
        for pid in jobs:
            if _running(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_thread_id_is_taken_as_its_process() -> None:
    """`top -H` shows threads' ids, and /proc/TID reads like a process: --pid TID was diagnosed
    as 'pid TID (memcached -l 127.0.0.1)', its children (whose parent is the process) missed."""
    import threading

    from hone.diagnose.descendants import thread_group

    ready, done = threading.Event(), threading.Event()
    tid: list[int] = []

    def worker() -> None:
        tid.append(threading.get_native_id())
        ready.set()
        done.wait(5)

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        ready.wait(5)
        assert tid[0] != os.getpid() and Path(f"/proc/{tid[0]}").exists()
        assert thread_group(tid[0]) == os.getpid()
        assert thread_group(os.getpid()) == os.getpid()
        assert thread_group(2**22 + 1) == 0  # above pid_max: no such task
    finally:
        done.set()
        thread.join()


def test_a_script_of_short_commands_shows_where_the_time_went(hone_cli, tmp_path: Path) -> None:
    """A shell that runs 150 awks of about 5 ms each: perf's samples hold none of them (each
    ends before its first sample), and the verdict was `Mostly idle`. Their CPU time, written by
    perf as each ends, is the verdict, the hot threads' row of awk and the flame graph's."""
    script = 'for i in $(seq 150); do awk "BEGIN{for(i=0;i<200000;i++)s+=i}"; done'
    done = hone_cli("diagnose", "-o", str(tmp_path / "rep"), "--", "sh", "-c", script)
    assert done.returncode == 0, done.stderr
    d = Diagnosis.load(tmp_path / "rep" / "diagnosis.hone")
    top = next(f for f in d.findings if f.own)
    assert top.kind == "cpu" and "short-lived processes: awk (" in top.headline, d.findings
    awk = next(t for t in d.threads if t.comm == "awk")
    assert awk.name.startswith("awk (") and awk.cpu_pct > 20, d.threads
    assert d.profile.threads().get("awk", 0) > 0.5 * d.profile.total
    assert "awk (" in (tmp_path / "rep" / "oncpu.folded").read_text()
