"""A server its clients keep short of requests, on a machine other work keeps busy: the lead is
that it waits for work (its own threads' state), the run queue of others comes after."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from hone.diagnose.profile import Profile
from hone.diagnose.report import Diagnosis
from hone.diagnose.threads import ThreadStat
from hone.diagnose.verdict import decide

#: A request every 10 ms or so on one connection: memcached's worker mostly sleeps.
CLIENT = """
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
while True:
    s.sendall(b"get k\\r\\n"); s.recv(100); time.sleep(0.01)
"""


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_starved_server_on_a_busy_machine_leads_with_its_wait_for_work(
    hone_cli, tmp_path: Path
) -> None:
    port = _port()
    # the server, at a lower priority, and three busy loops share the last CPU: a request that
    # wakes the server waits for the loops' time slices (at the same priority, or beside one
    # loop on a quiet machine, the scheduler ran the woken server almost at once), and the
    # other CPU is left to hone
    cpu = ["taskset", "-c", str((os.cpu_count() or 1) - 1)]
    server = subprocess.Popen(["nice", "-n", "10", *cpu, "memcached", "-l", "127.0.0.1",
                               "-p", str(port), "-U", "0", "-u", "root", "-t", "4",
                               "-m", "64"])  # fmt: skip
    burners = [subprocess.Popen([*cpu, sys.executable, "-c", "while True: pass"]) for _ in range(3)]
    client = None
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                time.sleep(0.05)
        client = subprocess.Popen([sys.executable, "-c", CLIENT, str(port)])
        folder = tmp_path / "r"
        done = hone_cli("diagnose", "--pid", str(server.pid), "-d", "3", "--no-locks",
                        "-o", str(folder))  # fmt: skip
    finally:
        for process in [client, server, *burners]:
            if process:
                process.kill()
                process.wait()
    assert done.returncode == 0, done.stderr
    d = Diagnosis.load(folder / "diagnosis.hone")
    kinds = [f.kind for f in d.findings]
    assert kinds[0] == "idle", ([f.headline for f in d.findings], d.topdown.software)
    assert d.findings[0].headline.startswith("Mostly waiting for work:"), d.findings[0].headline
    assert "they sleep in epoll_wait" in d.findings[0].headline
    # the others' run queue (which led before) is still said, after it, and suggests nothing
    # of the server's own
    assert "runqueue" in kinds, [f.headline for f in d.findings]
    assert not d.findings[kinds.index("runqueue")].own
    assert "verdict: Mostly waiting for work" in done.stdout


def _thread(tid: int, cpu: float, runq: float, sleep: float) -> ThreadStat:
    return ThreadStat(tid, "mc-worker", cpu, cpu / 2, cpu / 2, runq, 0.0, sleep, pid=7)


def test_a_server_busy_with_its_own_clients_keeps_the_run_queue_first() -> None:
    """The rule's edges on the threads measured: the starved worker (3 % on CPU, 20 % in the
    run queue, 77 % asleep) leads with its wait for work; workers loaded by their clients
    (memcaslap -c 32: 10 % on CPU, 50 % waiting for a CPU, 40 % asleep) keep the run queue."""
    profile = Profile.from_folded({"memcached;main;epoll_wait": 10})
    starved = decide(profile, [_thread(1, 3.0, 20.0, 77.0)], 3.0, 2)
    assert starved[0].kind == "idle" and starved[1].kind == "runqueue"
    busy = [_thread(i, 10.0, 50.0, 40.0) for i in range(1, 5)]
    loaded = decide(profile, busy, 3.0, 2)
    assert loaded[0].kind == "runqueue"
    # others' run queue behind a process that sleeps less than half its time stays first too
    half = decide(profile, [_thread(1, 20.0, 40.0, 40.0)], 3.0, 2)
    assert half[0].kind == "runqueue" and not half[0].own
