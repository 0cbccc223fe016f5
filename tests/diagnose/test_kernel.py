"""On-CPU time in the kernel: split by the part of the kernel, told what changes it (network
sysctls, the server's settings), never offered a compiler-flags project."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from benchmarks.diagnose.inputs import build
from hone.diagnose import catalogue, kernel
from hone.diagnose.fold import Frame
from hone.diagnose.profile import Profile
from hone.diagnose.report import Diagnosis
from hone.diagnose.threads import ThreadStat
from hone.diagnose.verdict import decide
from hone.diagnose.window import SYSCALL_KINDS

K = "[kernel.kallsyms]"
LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"


def stack(user: str, kernel_frames: str = "") -> tuple[Frame, ...]:
    """`main;__libc_open` in srv or libc (by the name's leading underscores), then the kernel's."""
    frames = [Frame(n, LIBC if n.startswith("__") else "srv") for n in user.split(";")]
    return tuple(frames + [Frame(n, K) for n in kernel_frames.split(";") if n])


ENTRY = "entry_SYSCALL_64_after_hwframe;do_syscall_64;"
WRITEV = ENTRY + "do_writev;vfs_writev;sock_write_iter;tcp_sendmsg;_raw_spin_unlock_irqrestore"
OPENAT = ENTRY + "__x64_sys_openat;do_sys_openat2;path_openat;link_path_walk"
FAULT = "asm_exc_page_fault;exc_page_fault;handle_mm_fault;clear_page_erms"
#: nginx's shape: writev into TCP, openat of the file, a page fault, a little of its own code
SERVER = Profile(
    stacks={
        ("srv", stack("main;__GI___writev", WRITEV)): 50,
        ("srv", stack("main;__libc_open", OPENAT)): 25,
        ("srv", stack("main", FAULT)): 5,
        ("srv", stack("main;parse_request")): 20,
    }
)


def test_split_by_part_of_the_kernel_and_system_call() -> None:
    found = kernel.split(SERVER)
    assert found.share == pytest.approx(0.8)
    assert found.groups == {"network": 50, "files": 25, "memory": 5}
    assert found.top_calls("network") == [("writev", 0.5)]
    assert found.top_calls("files") == [("openat", 0.25)]
    assert found.top_calls("memory") == [("page fault", 0.05)]


def test_kernel_time_outranks_the_programs_own_code() -> None:
    threads = [ThreadStat(1, "srv", 90, 18, 72, 0, 0, 10)]
    findings = decide(SERVER, threads, 10, 2)
    assert [f.kind for f in findings[:3]] == ["kernel-network", "kernel-files", "cpu"]
    network = findings[0]
    assert network.score == pytest.approx(0.45)
    assert "network stack: 50% of on-CPU samples (writev 50%)" in network.headline
    assert "system time 80% of its CPU time" in network.headline
    # the program's own part is named by its own function, not by a kernel one
    assert findings[2].score == pytest.approx(0.18)
    assert "parse_request" in findings[2].headline


def test_each_kernel_finding_has_details_of_its_own() -> None:
    """The window puts the system-call rate first in each kernel finding's details: with one
    list shared by them all, a memcached under load showed it twice in each of its two."""
    threads = [ThreadStat(1, "srv", 90, 18, 72, 0, 0, 10)]
    found = [f for f in decide(SERVER, threads, 10, 2) if f.kind in SYSCALL_KINDS]
    assert [f.kind for f in found] == ["kernel-network", "kernel-files"]
    for finding in found:  # as window._analyse does
        finding.details.insert(0, "system calls: 900 calls/s")
    assert [f.details.count("system calls: 900 calls/s") for f in found] == [1, 1]


def test_a_process_mostly_in_the_kernel_is_told_the_kernels_part_before_its_code() -> None:
    # nginx beside other work: the network stack 30 %, the kernel 65 % in all; its own code
    # (35 %) outweighs each part of the kernel alone
    loaded = Profile(
        stacks={
            ("srv", stack("main;__GI___writev", WRITEV)): 30,
            ("srv", stack("main;__libc_open", OPENAT)): 15,
            ("srv", stack("main", "entry_SYSCALL_64;do_syscall_64;__x64_sys_epoll_wait")): 20,
            ("srv", stack("main;parse_request")): 35,
        }
    )
    threads = [ThreadStat(1, "srv", 60, 21, 39, 0, 0, 10)]
    findings = decide(loaded, threads, 10, 2)
    assert [f.kind for f in findings[:2]] == ["kernel-network", "cpu"]
    assert findings[1].score > findings[0].score  # the order is the rule's, the scores stay
    # mostly the program's own code: that comes first
    busy = Profile(stacks={**loaded.stacks, ("srv", stack("main;parse_request")): 70})
    assert decide(busy, threads, 10, 2)[0].kind == "cpu"
    # timer interrupts while its code ran are the kernel's, not the process's doing
    tick = "asm_sysvec_apic_timer_interrupt;sysvec_apic_timer_interrupt;__irq_exit_rcu"
    ticked = Profile(
        stacks={
            ("srv", stack("main;__GI___writev", WRITEV)): 30,
            ("srv", stack("main;parse_request", tick)): 25,
            ("srv", stack("main;parse_request")): 45,
        }
    )
    assert decide(ticked, threads, 10, 2)[0].kind == "cpu"


@pytest.fixture
def nginx(tmp_path: Path):
    """nginx with one worker on a free port, serving a 4 KB file; yields (port, worker pid)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "html").mkdir()
    (tmp_path / "html" / "4k.html").write_bytes(b"x" * 4096)
    (tmp_path / "nginx.conf").write_text(
        f"worker_processes 1; pid {tmp_path}/nginx.pid; error_log {tmp_path}/error.log;\n"
        "events { worker_connections 1024; }\n"
        f"http {{ access_log off; server {{ listen 127.0.0.1:{port}; root {tmp_path}/html; }} }}\n"
    )
    subprocess.run(
        ["nginx", "-e", f"{tmp_path}/error.log", "-p", str(tmp_path), "-c",
         str(tmp_path / "nginx.conf")], check=True,
    )  # fmt: skip
    for _ in range(50):
        if (tmp_path / "nginx.pid").exists():
            break
        time.sleep(0.1)
    master = int((tmp_path / "nginx.pid").read_text())
    children = Path(f"/proc/{master}/task/{master}/children")
    for _ in range(50):
        workers = children.read_text().split()
        if workers:
            break
        time.sleep(0.1)
    try:
        yield port, int(workers[0])
    finally:
        subprocess.run(["kill", "-QUIT", str(master)], check=False)


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _serving(worker: int, ticks: int = 5, timeout: float = 30) -> None:
    """Wait until the worker has spent `ticks` clock ticks (50 ms) on the CPU: wrk's requests
    are being served."""
    start, deadline = _cpu_ticks(worker), time.monotonic() + timeout
    while _cpu_ticks(worker) - start < ticks:
        assert time.monotonic() < deadline, "nginx served nothing under wrk"
        time.sleep(0.02)


@pytest.mark.slow
def test_nginx_under_wrk_gets_network_knobs_not_compiler_flags(
    hone_cli, nginx: tuple[int, int], tmp_path: Path
) -> None:
    port, worker = nginx
    load = subprocess.Popen(
        ["timeout", "30", "wrk", "-t1", "-c32", "-d12s", f"http://127.0.0.1:{port}/4k.html"],
        stdout=subprocess.DEVNULL,
    )
    try:
        _serving(worker)
        done = hone_cli(
            "diagnose", "--pid", str(worker), "-d", "5", "--json",
            "--suggest-project", str(tmp_path / "proj"),
        )  # fmt: skip
    finally:
        load.kill()
        load.wait()
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    own = [f for f in document["findings"] if f["own"] and f["kind"] not in ("runqueue", "idle")]
    # writev into TCP, not nginx's own code. Usually the first finding (54-61 % of the samples
    # on an idle machine); beside two CPU burners the switches in and out of epoll_wait grow to
    # 19-30 % (kernel-switch) against the network's 37-55 %, and on a busy machine they can
    # come first
    network = next(f for f in own if f["kind"] == "kernel-network")
    assert network["headline"].split("(")[1].startswith("writev"), network["headline"]
    assert own[0]["kind"].startswith("kernel-"), own
    knobs = {s["name"] for s in document["suggestions"]}
    assert {"net.ipv4.tcp_wmem", "net.core.netdev_budget"} <= knobs
    project = tmp_path / "proj"
    assert not (project / "flags.conf").exists()  # no compiler-flags project
    data = yaml.safe_load((project / "hone.yaml").read_text())
    assert "net.ipv4.tcp_wmem" in data["knobs"] and "opt" not in data["knobs"]
    assert hone_cli("check", str(project)).returncode == 0
    # the terminal says the same, with the advice for the network stack
    text = hone_cli("diagnose", "--from", str(Path(document["files"]["saved"]))).stdout
    assert "compiler-flags" not in text
    assert f"advice: {catalogue.advice(own[0]['kind'])[0]}" in text


def test_the_dentry_cache_knob_only_for_path_lookups() -> None:
    """vm.vfs_cache_pressure keeps dentries and inodes cached: it was offered to a program
    whose file system time was 95 % fdatasync, and to 1-byte writes to /dev/null."""
    sync = ENTRY + "__x64_sys_fdatasync;ext4_sync_file;file_write_and_wait_range"
    write = ENTRY + "ksys_write;vfs_write"
    syncing = Profile(stacks={("db", stack("main;fdatasync", sync)): 95,
                              ("db", stack("main;__libc_write", write)): 5})  # fmt: skip
    threads = [ThreadStat(1, "db", 100, 0, 100, 0, 0, 10)]
    for profile, knobs in ((syncing, []), (SERVER, ["vm.vfs_cache_pressure"])):
        files = next(f for f in decide(profile, threads, 10, 2) if f.kind == "kernel-files")
        d = Diagnosis(profile=profile, findings=[files])
        assert [s.name for s in catalogue.knobs_for(d.knob_kinds())] == knobs
        assert files.knobs == bool(knobs)


def test_the_vdso_is_user_space_not_the_kernel() -> None:
    """A loop around clock_gettime (73 % of its samples in `__vdso_clock_gettime`, no system
    time) was told 'CPU time in other kernel work: 74 %' and to make fewer system calls."""
    vdso = (
        Frame("main", "prog"),
        Frame("clock_gettime", LIBC),
        Frame("__vdso_clock_gettime", "[vdso]"),
    )
    profile = Profile(stacks={("prog", vdso): 75, ("prog", stack("main;crunch")): 25})
    assert kernel.split(profile).kernel == 0
    threads = [ThreadStat(1, "prog", 100, 0, 0, 0, 0, 10)]
    findings = decide(profile, threads, 10, 2)
    assert [f.kind for f in findings] == ["cpu"]
    assert "__vdso_clock_gettime" in findings[0].headline


def test_interrupts_while_it_ran_are_not_its_own_doing() -> None:
    """At -F 100000 a busy loop showed 15% of its samples in timer interrupts, their RCU
    softirqs and preemption: no knob or build of the program's reduces that."""
    tick = "asm_sysvec_apic_timer_interrupt;sysvec_apic_timer_interrupt;__irq_exit_rcu;"
    busy = Profile(
        stacks={
            ("loop", stack("main;hot_work")): 85,
            ("loop", stack("main;hot_work", tick + "handle_softirqs;rcu_core")): 15,
        }
    )
    findings = decide(busy, [ThreadStat(1, "loop", 100, 88, 12, 0, 0, 0)], 10, 2)
    assert findings[0].kind == "cpu" and "hot_work" in findings[0].headline
    interrupts = next(f for f in findings if f.kind == "kernel-interrupts")
    assert not interrupts.own and "(softirq 15%)" in interrupts.headline


def test_switches_around_a_blocking_call_are_the_schedulers() -> None:
    """nginx beside two CPU burners: 19-30 % of its samples in finish_task_switch under
    epoll_wait, as it is switched out and back in. They were `other kernel work`; the
    switches are named, and a call's samples outside the switch go with it (by its vote)."""
    wait = ENTRY + "__x64_sys_epoll_wait;do_epoll_wait;ep_poll;schedule_hrtimeout_range;"
    switch = wait + "schedule;__schedule;finish_task_switch.isra.0"
    busy = Profile(
        stacks={
            ("srv", stack("main;__GI___writev", WRITEV)): 45,
            ("srv", stack("main;epoll_wait", switch)): 28,
            ("srv", stack("main;epoll_wait", wait + "ep_send_events")): 2,
            ("srv", stack("main;parse_request")): 25,
        }
    )
    found = kernel.split(busy)
    assert found.groups == {"network": 45, "switch": 30}
    assert found.top_calls("switch") == [("epoll_wait", 0.3)]
    findings = decide(busy, [ThreadStat(1, "srv", 90, 20, 70, 0, 0, 10)], 10, 2)
    switched = next(f for f in findings if f.kind == "kernel-switch")
    assert switched.own and "switches out and back in" in switched.headline
    assert findings[0].kind == "kernel-network"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "kind", "call"),
    [("write", "kernel-files", "write"), ("getppid", "kernel-other", "getppid"),
     ("pipe", "kernel-files", "read")],
)  # fmt: skip
def test_tiny_system_calls_are_charged_to_the_call(hone_cli, tmp_path: Path, mode: str,
                                                   kind: str, call: str) -> None:  # fmt: skip
    """A loop of 1-byte writes to /dev/null (or getppid, or 1-byte reads of a pipe) spends
    half its kernel samples in the syscall entry and exit, whose stacks stop in do_syscall_64:
    they were 'other kernel work' called `kernel`, and the write's own samples were split
    between files and other work by the frames each happened to show."""
    program = build("sys_loop")
    folder = tmp_path / "rep"
    done = hone_cli("diagnose", "-F", "499", "-d", "2", "--no-offcpu", "--no-locks", "-o",
                    str(folder), "--", str(program), mode, "2")  # fmt: skip
    assert done.returncode == 0, done.stderr
    d = Diagnosis.load(folder / "diagnosis.hone")
    found = kernel.split(d.profile)
    assert found.share > 0.5, found  # the loop lives in system calls
    charged = found.calls.get(kind.removeprefix("kernel-"), {}).get(call, 0)
    assert charged >= 0.9 * found.kernel, found.calls
    finding = next(f for f in d.findings if f.kind == kind)
    assert f"({call} " in finding.headline, finding.headline


@pytest.mark.slow
def test_the_tracings_own_cost_is_left_out_of_the_findings(hone_cli, tmp_path: Path) -> None:
    """With the futex tracepoints (the lock recorder) and raw_syscalls:sys_enter (the call
    counter) enabled, every call of a 1-byte write loop takes the kernel's tracing slow path:
    syscall_trace_enter, perf_syscall_enter and the like held 13-40 % of its samples, and were
    the write's time in its finding and among its hottest kernel functions."""
    program = build("sys_loop")
    folder = tmp_path / "rep"
    done = hone_cli("diagnose", "-F", "499", "-d", "2", "--no-offcpu", "-o", str(folder),
                    "--", str(program), "write", "4")  # fmt: skip
    assert done.returncode == 0, done.stderr
    d = Diagnosis.load(folder / "diagnosis.hone")
    kept, cut = kernel.without_tracing(d.profile)
    assert cut / d.profile.total > 0.05, kernel.split(d.profile).functions
    assert f"tracing overhead: {cut / d.profile.total:.0%} of samples" in done.stdout
    assert all(not kernel.traced(frames) for _, frames in kept.stacks)
    files = next(f for f in d.findings if f.kind == "kernel-files")
    share = kernel.split(kept).group_share("files")
    assert f"file system calls: {share:.0%} of on-CPU samples" in files.headline
    hot = [line.split()[0] for line in files.details if "([kernel])" in line]
    assert hot and not any(n.startswith(("perf_", "syscall_trace_enter")) for n in hot), hot
    body = json.loads(hone_cli("diagnose", "--from", str(folder), "--json").stdout)
    assert body["tracing_overhead"] == pytest.approx(cut / d.profile.total, abs=1e-4)
    assert "Tracing overhead: " in (folder / "report.html").read_text()


#: A PostgreSQL backend answering pgbench through its Unix socket (stacks from a real diagnosis)
UNIX_SEND = ENTRY + "__x64_sys_sendto;__sys_sendto;unix_stream_sendmsg;sock_alloc_send_pskb"
UNIX_RECV = (ENTRY + "__x64_sys_recvfrom;__sys_recvfrom;sock_recvmsg;unix_stream_recvmsg;"
             "unix_stream_read_generic;_raw_spin_unlock_irqrestore")  # fmt: skip


def test_unix_domain_sockets_are_not_the_network_stack() -> None:
    """pgbench through PostgreSQL's socket: 'CPU time in the kernel's network stack: 25% of
    on-CPU samples (sendto 13%, recvfrom 12%)' and knobs net.ipv4.tcp_wmem, tcp_rmem,
    netdev_budget, dev_weight, with advice about the NIC's interrupts: none of which a local
    socket passes through."""
    backend = Profile(
        stacks={
            ("postgres", stack("PostgresMain;__send", UNIX_SEND)): 13,
            ("postgres", stack("PostgresMain;__libc_recv", UNIX_RECV)): 12,
            ("postgres", stack("PostgresMain;exec_simple_query")): 75,
        }
    )
    found = kernel.split(backend)
    assert found.groups == {"unix": 25}
    assert found.top_calls("unix") == [("sendto", 0.13), ("recvfrom", 0.12)]
    threads = [ThreadStat(1, "postgres", 90, 45, 45, 0, 0, 10)]
    local = next(f for f in decide(backend, threads, 10, 2) if f.kind.startswith("kernel-"))
    assert local.kind == "kernel-unix" and local.kind in SYSCALL_KINDS
    assert "Unix-domain sockets (local clients): 25% of on-CPU samples" in local.headline
    assert catalogue.knobs_for(["kernel-unix"]) == []
    assert not any("NIC" in tip or "TCP_CORK" in tip for tip in catalogue.advice("kernel-unix"))
    # a TCP client (nginx's writev above) stays the network stack's, loopback or not
    assert kernel.split(SERVER).groups["network"] == 50
