"""`hone diagnose --unit NAME` and `hone diagnose -- systemctl start NAME`: a systemd service is
its control group (module unit). No systemd runs on this machine, but the kernel's hierarchies
that systemd keeps services in are mounted as in its hybrid mode (cgroup v1 `name=systemd` at
/sys/fs/cgroup/systemd, cgroup2 at /sys/fs/cgroup/unified), so each test makes a service's group
there as systemd would and starts a real memcached in it."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from forked_hone import run_hone

from hone.diagnose import descendants
from hone.diagnose.perf_record import command_of
from hone.diagnose.report import Diagnosis
from hone.diagnose.suggest import project_name
from hone.diagnose.unit import Unit, find, hierarchies, started, unit_name
from hone.errors import HoneError

V1 = Path("/sys/fs/cgroup/systemd")
V2 = Path("/sys/fs/cgroup/unified")
SPIN = ["sh", "-c", "while :; do :; done"]


@pytest.fixture
def group() -> Iterator[Callable[..., Path]]:
    """Makes a service's control group, `root/PARENTS.../hone-test-RANDOM.service` (or only
    names it, `made_now=False`, for a stand-in systemd to make). Afterwards the processes left
    in it go back to the root's group and its folders are removed, with the parents made for
    it that no other group uses."""
    made: list[tuple[Path, Path, list[Path]]] = []

    def make(root: Path, *parents: str, made_now: bool = True) -> Path:
        folder = root.joinpath(*parents, f"hone-test-{uuid.uuid4().hex[:8]}.service")
        missing = [p for p in folder.parents if p.is_relative_to(root) and not p.exists()]
        made.append((root, folder, missing))
        if made_now:
            folder.mkdir(parents=True)
        return folder

    yield make
    for root, folder, missing in made:
        for here, _, _ in sorted(os.walk(folder), reverse=True):  # sub-groups first
            for pid in Path(here, "cgroup.procs").read_text().split():
                with contextlib.suppress(OSError):  # gone meanwhile
                    (root / "cgroup.procs").write_text(pid)
            deadline = time.monotonic() + 5
            while True:  # a process killed just before leaves its group as it is reaped
                try:
                    Path(here).rmdir()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
        for parent in missing:  # deepest first
            with contextlib.suppress(OSError):  # another group is in it
                parent.rmdir()


def join(folder: Path, pid: int) -> None:
    """Moves a process into a group, as systemd puts a service's first process in its own."""
    (folder / "cgroup.procs").write_text(str(pid))


@pytest.fixture
def run() -> Iterator[Callable[..., subprocess.Popen]]:
    """Starts a program (output discarded), optionally inside a group; each is killed after."""
    programs: list[subprocess.Popen] = []

    def start(argv: list[str], folder: Path | None = None) -> subprocess.Popen:
        programs.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL))  # fmt: skip
        if folder is not None:
            join(folder, programs[-1].pid)
        return programs[-1]

    yield start
    for program in programs:
        program.kill()
        program.wait()


@pytest.fixture
def adopted() -> Iterator[Callable[..., int]]:
    """Starts a program outside this process's tree, as systemd starts a service's processes
    (its parent, a shell, exits at once: init adopts it), optionally inside a group; its pid.
    A Watch leaves its own process's descendants out (hone's recorders). Each is killed after."""
    pids: list[int] = []

    def start(argv: list[str], folder: Path | None = None) -> int:
        said = subprocess.run(["sh", "-c", '"$@" </dev/null >/dev/null 2>&1 & echo $!', "sh",
                               *argv], capture_output=True, text=True, check=True)  # fmt: skip
        pids.append(int(said.stdout))
        if folder is not None:
            join(folder, pids[-1])
        return pids[-1]

    yield start
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def serving(port: int) -> None:
    """Waits until memcached takes connections on `port`."""
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, f"memcached is not serving on {port}"
            time.sleep(0.05)


def memcached(port: int) -> list[str]:
    return ["memcached", "-u", "root", "-l", "127.0.0.1", "-p", str(port), "-t", "2"]


def memcaslap(port: int, seconds: int) -> list[str]:
    return ["memcaslap", "-s", f"127.0.0.1:{port}", "-t", f"{seconds}s", "-T", "1", "-c", "8"]


def window_began(pid: int) -> None:
    """Waits until hone's perf recorders of `pid` have enabled their events (each runs its
    `sleep`): the window begins right after."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        recorders = []
        for entry in Path("/proc").iterdir():
            try:
                argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
            except OSError:
                continue
            listed = argv[argv.index("-p") + 1].split(",") if "-p" in argv else []
            if argv[1:2] == ["record"] and str(pid) in listed:
                recorders.append(int(entry.name))
        if recorders and all(command_of(perf) for perf in recorders):
            return
        time.sleep(0.05)
    raise AssertionError(f"no perf recorder of pid {pid} started")


def workers(master: int, count: int, old: frozenset[int] = frozenset()) -> list[int]:
    """Waits until the nginx master has `count` workers besides `old`; their pids."""
    children = Path(f"/proc/{master}/task/{master}/children")
    deadline = time.monotonic() + 10
    while True:
        found = sorted(set(map(int, children.read_text().split())) - old)
        if len(found) >= count:
            return found
        assert time.monotonic() < deadline, f"nginx started {found}, not {count} workers"
        time.sleep(0.05)


def cpu_ticks(pid: int) -> int:
    return descendants.processes()[pid][3]


def sampled(d: Diagnosis) -> set[int]:
    """The processes the on-CPU profile holds samples of, from its root frames (`nginx-12`)."""
    return {int(thread.rpartition("-")[2]) for thread in d.profile.threads()}


@pytest.fixture
def nginx_conf(tmp_path: Path) -> tuple[Path, int]:
    """nginx in the foreground with two workers on a free port, serving a 4 KB file."""
    port = free_port()
    (tmp_path / "html").mkdir()
    (tmp_path / "html" / "4k.html").write_bytes(b"x" * 4096)
    conf = tmp_path / "nginx.conf"
    conf.write_text(
        f"daemon off; worker_processes 2; pid {tmp_path}/nginx.pid;\n"
        f"error_log {tmp_path}/error.log; events {{ worker_connections 1024; }}\n"
        f"http {{ access_log off; server {{ listen 127.0.0.1:{port}; root {tmp_path}/html; }} }}\n"
    )
    return conf, port


def in_group(folder: Path, argv: list[str]) -> list[str]:
    """The command run inside the group from its start, as systemd starts a service: what it
    forks is born there."""
    return ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(folder), *argv]


@pytest.mark.slow
def test_every_process_of_a_unit_is_recorded(hone_cli, group, run, nginx_conf, tmp_path) -> None:
    """nginx with two workers under wrk: the on-CPU profile holds both workers' stacks, each
    under a root of its own, and the workers a reload forks in the window (the master's, whom
    perf follows); the children finding sends no one to --pid a recorded process."""
    folder = group(V1, "system.slice")
    conf, port = nginx_conf
    master = run(in_group(folder, ["nginx", "-e", str(conf.parent / "error.log"), "-p",
                                   str(conf.parent), "-c", str(conf)])).pid  # fmt: skip
    try:
        _reload_in_the_window(hone_cli, folder, master, port, tmp_path, run)
    finally:  # the workers outlive a killed master, which may fork one more as it is killed
        deadline = time.monotonic() + 10
        while (left := Unit([folder.name], [folder]).pids()) and time.monotonic() < deadline:
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)


def _reload_in_the_window(hone_cli, folder: Path, master: int, port: int, tmp_path: Path,
                          run: Callable[..., subprocess.Popen]) -> None:  # fmt: skip
    first = workers(master, 2)
    load = run(["wrk", "-t1", "-c16", "-d60s", f"http://127.0.0.1:{port}/4k.html"])
    begun = cpu_ticks(first[0]) + cpu_ticks(first[1])
    deadline = time.monotonic() + 30
    while cpu_ticks(first[0]) + cpu_ticks(first[1]) - begun < 5:  # serving
        assert time.monotonic() < deadline and load.poll() is None, "nginx served nothing"
        time.sleep(0.05)
    result: list[subprocess.CompletedProcess] = []
    rep = tmp_path / "rep"
    args = ["--unit", folder.name, "-d", "3", "--no-offcpu", "--no-locks", "-o", str(rep)]
    hone = threading.Thread(target=lambda: result.append(hone_cli("diagnose", *args)))
    hone.start()
    window_began(master)
    time.sleep(1)
    os.kill(master, signal.SIGHUP)  # a reload: the master forks two new workers
    reloaded = workers(master, 2, frozenset(first))
    hone.join()
    assert result[0].returncode == 0, result[0].stderr
    d = Diagnosis.load(rep / "diagnosis.hone")
    assert d.pid in first  # the busiest process names the target, as before
    assert set(first) <= sampled(d) and set(reloaded) & sampled(d), d.profile.threads()
    assert set(first + reloaded + [master]) <= set(d.processes)
    assert d.processes[0] == d.pid
    said = result[0].stdout.splitlines()[0]
    assert said.startswith(f"hone diagnose: unit {folder.name}, {len(d.processes)} processes: "
                           f"pid {d.pid} (nginx: worker process), pid "), said  # fmt: skip
    busy = {t.pid for t in d.threads if t.cpu_pct > 1}
    assert set(first) <= busy, d.threads  # the hot threads are both workers'
    assert all(t.process.startswith(f"pid {t.pid} (nginx: ") for t in d.threads)
    for finding in d.findings:
        assert not any(f"--pid {pid} " in finding.headline for pid in d.processes), finding


def children_finding(d: Diagnosis) -> list[str]:
    return next(f for f in d.findings if f.kind == "children").details


def test_unit_names_and_the_commands_that_start_units() -> None:
    assert unit_name("nginx") == "nginx.service"
    assert unit_name("nginx.service") == "nginx.service"
    assert unit_name("getty@tty1") == "getty@tty1.service"
    assert unit_name("docker.socket") == "docker.socket"
    for bad in ("a/b", "../x", "-x", ""):
        with pytest.raises(HoneError, match="is not a unit name"):
            unit_name(bad)
    assert started(["systemctl", "start", "nginx"]) == ["nginx.service"]
    both = ["a.service", "b.service"]
    assert started(["/usr/bin/systemctl", "restart", "a", "b.service"]) == both
    assert started(["systemctl", "reload-or-restart", "nginx"]) == ["nginx.service"]
    assert started(["service", "nginx", "start"]) == ["nginx.service"]
    for other in (["systemctl", "stop", "nginx"], ["systemctl", "--user", "start", "x"],
                  ["systemctl", "start"], ["systemctl", "start", "ng*"],
                  ["service", "nginx", "stop"], ["service", "nginx", "start", "now"],
                  ["sh", "-c", "systemctl start nginx"], []):  # fmt: skip
        assert started(other) == [], other


def test_a_project_suggested_for_a_unit_is_named_after_its_process() -> None:
    assert project_name("unit a.service, pid 12 (memcached -u root)") == "diagnose-memcached"


def test_hierarchies_come_from_the_mount_table(tmp_path: Path) -> None:
    assert V1 in hierarchies() and V2 in hierarchies()
    table = tmp_path / "mounts"
    table.write_text(
        "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid 0 0\n"
        "cgroup /cg/cpu cgroup rw,cpu 0 0\n"
        "cgroup /cg/sys\\040temd cgroup rw,xattr,name=systemd 0 0\n"
        "tmpfs /tmp tmpfs rw 0 0\n"
    )
    assert hierarchies(table) == [Path("/sys/fs/cgroup"), Path("/cg/sys temd")]


def test_a_unit_is_every_process_of_its_group_and_sub_groups(group, run) -> None:
    folder = group(V1, "system.slice")
    first = run(["sleep", "30"], folder)
    (folder / "worker").mkdir()
    worker = run(["sleep", "30"], folder / "worker")
    unit = find([folder.name])
    assert unit.folders == [folder]
    assert unit.pids() == {first.pid, worker.pid}
    assert unit.main() == first.pid  # the oldest


def test_the_recorded_process_is_the_busiest(group, run) -> None:
    """nginx's master and the postmaster only hand out work: the worker that runs is recorded."""
    folder = group(V1, "system.slice")
    master = run(["sleep", "30"], folder)
    worker = run(SPIN, folder)
    unit = find([folder.name])
    assert unit.main() == worker.pid != master.pid


def test_a_unit_outside_system_slice_is_found_by_name(group, run) -> None:
    folder = group(V2, "hone-test.slice", "nested.slice")
    server = run(["sleep", "30"], folder)
    unit = find([folder.name])
    assert unit.folders == [folder] and unit.main() == server.pid


def test_a_unit_systemd_gives_no_group_is_one_line(tmp_path, monkeypatch) -> None:
    """systemd answers an empty ControlGroup for a unit that is not running (a stand-in
    systemctl says so: no systemd runs here)."""
    (tmp_path / "systemctl").write_text("#!/bin/sh\necho\n")
    (tmp_path / "systemctl").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    with pytest.raises(HoneError) as said:
        find(["stopped.service"])
    assert str(said.value) == (
        "unit stopped.service has no control group: systemctl show gives it none; is it running?"
    )


def test_a_process_that_joins_the_group_counts_from_then_on(group, adopted) -> None:
    """One born in the window counts from zero; one moved in as it ran, from its CPU time when
    first seen (counted from its birth, its earlier work would be the unit's)."""
    folder = group(V1, "system.slice")
    main = adopted(["sleep", "30"], folder)
    older = adopted(SPIN)
    time.sleep(0.5)  # it works before the window
    watch = descendants.Watch(main, unit=Unit([folder.name], [folder]))
    time.sleep(0.1)
    born = adopted(SPIN, folder)
    before = descendants.processes()[older][3]
    join(folder, older)
    for _ in range(4):
        time.sleep(0.25)
        watch.sample()
    assert watch.seen[born].ticks0 == 0
    assert watch.seen[older].ticks0 >= before > 0
    found = {c.pid: c for c in watch.result()}
    assert found[born].unit == folder.name and found[born].cpu_pct > 10
    assert found[older].unit == folder.name


def test_hone_in_the_group_is_not_the_units_work(group, run, adopted) -> None:
    """hone run from inside the unit's group (a login's scope): neither hone nor the processes
    it starts (its recorders) count as the unit's."""
    folder = group(V1, "system.slice")
    main = adopted(["sleep", "30"], folder)
    join(folder, os.getpid())  # the group fixture moves it back to the root's group
    watch = descendants.Watch(main, unit=Unit([folder.name], [folder]))
    recorder = run(SPIN)  # born in the group, hone's child
    other = adopted(SPIN, folder)
    for _ in range(3):
        time.sleep(0.25)
        watch.sample()
    assert {os.getpid(), recorder.pid, other} <= Unit([folder.name], [folder]).pids()
    assert [c.pid for c in watch.result()] == [other]


@pytest.mark.slow
def test_diagnose_a_unit_and_a_process_that_joins_it(hone_cli, group, run, tmp_path) -> None:
    """cgroup v1 (name=systemd): memcached is the unit's process and is found busy; the load
    generator, moved into the unit's group once the window runs, is counted beside it."""
    folder = group(V1, "system.slice")
    port = free_port()
    server = run(memcached(port), folder)
    serving(port)
    result: list[subprocess.CompletedProcess] = []
    rep = tmp_path / "rep"
    args = ["--unit", folder.name, "-d", "3", "--no-offcpu", "--no-locks", "-o", str(rep)]
    hone = threading.Thread(target=lambda: result.append(hone_cli("diagnose", *args)))
    hone.start()
    window_began(server.pid)
    time.sleep(0.3)
    load = run(memcaslap(port, 60), folder)
    hone.join()
    assert result[0].returncode == 0, result[0].stderr
    d = Diagnosis.load(rep / "diagnosis.hone")
    assert d.pid == server.pid
    assert d.target.startswith(f"unit {folder.name}, pid {server.pid} (memcached ")
    assert result[0].stdout.startswith(f"hone diagnose: unit {folder.name}, pid {server.pid} ")
    assert sum(t.cpu_pct for t in d.threads) > 5  # it served the load
    row = next(line for line in children_finding(d) if f"(pid {load.pid})" in line)
    assert row.startswith("memcaslap (pid ")
    assert float(row.split("on CPU ")[1].split("%")[0]) > 5, row
    headline = next(f.headline for f in d.findings if f.kind == "children")
    assert f"other processes of unit {folder.name}" in headline


@pytest.mark.slow
def test_diagnose_a_unit_in_cgroup2_with_a_sub_group(hone_cli, group, run, tmp_path) -> None:
    """cgroup2, a nested slice (found by name), the suffix added to the name given, and a
    process in a sub-group of the unit's recorded with the rest."""
    folder = group(V2, "hone-test.slice")
    port = free_port()
    server = run(memcached(port), folder)
    serving(port)
    (folder / "load").mkdir()
    load = run(memcaslap(port, 60), folder / "load")
    name = folder.name.removesuffix(".service")
    rep = tmp_path / "rep"
    done = hone_cli(
        "diagnose", "--unit", name, "-d", "2", "--no-offcpu", "--no-locks", "-o", str(rep)
    )
    assert done.returncode == 0, done.stderr
    d = Diagnosis.load(rep / "diagnosis.hone")
    assert d.pid == server.pid and d.processes == [server.pid, load.pid]
    assert d.target.startswith(f"unit {folder.name}, 2 processes: pid {server.pid} (memcached ")
    assert sum(t.cpu_pct for t in d.threads if t.pid == server.pid) > 5
    assert {server.pid, load.pid} <= sampled(d)
    assert "children" not in d.kinds  # memcaslap's stacks are in the profile


STAND_IN = """#!/bin/sh
# Stands in for systemd, which does not run on this machine: `start UNIT` makes the unit's
# control group, starts memcached in it and returns once it is there, as systemd does; `show -p
# ControlGroup --value UNIT.service` names the group.
case "$1 $3 $4" in
"start  ")
    group={root}/system.slice/$2.service
    mkdir -p "$group"
    sh -c 'g=$1; shift; echo $$ > "$g/cgroup.procs" && exec "$@"' sh "$group" {server} \\
        </dev/null >/dev/null 2>&1 &
    echo $! > {pidfile}
    until grep -qx $! "$group/cgroup.procs"; do sleep 0.01; done ;;
"show ControlGroup --value") echo "/system.slice/$5" ;;
*) echo "unknown: $*" >&2; exit 1 ;;
esac
"""


@pytest.mark.slow
def test_systemctl_start_is_followed_to_its_unit(hone_home, group, tmp_path) -> None:
    """`hone diagnose -- systemctl start UNIT`: systemctl returns as soon as systemd has started
    the service, outside the command's tree; hone diagnoses the unit's processes. An executable
    named systemctl first on PATH stands in for systemd, which does not run here."""
    folder = group(V1, "system.slice", made_now=False)
    port, pidfile = free_port(), tmp_path / "server.pid"
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    systemctl = bin_ / "systemctl"
    systemctl.write_text(STAND_IN.format(root=V1, server=" ".join(memcached(port)),
                                         pidfile=pidfile))  # fmt: skip
    systemctl.chmod(0o755)
    name = folder.name.removesuffix(".service")
    env = {**os.environ, "HONE_HOME": str(hone_home), "PATH": f"{bin_}:{os.environ['PATH']}"}
    try:
        done = run_hone("diagnose", "-d", "2", "-o", str(tmp_path / "rep"), "--",
                        "systemctl", "start", name, env=env, cwd=tmp_path)  # fmt: skip
    finally:
        server = int(pidfile.read_text()) if pidfile.exists() else None
        if server:
            os.kill(server, 9)
    assert done.returncode == 0, done.stderr
    d = Diagnosis.load(tmp_path / "rep" / "diagnosis.hone")
    assert d.pid == server
    assert d.target.startswith(f"unit {folder.name}, pid {server} (memcached ")
    assert f"followed unit {folder.name}, which systemctl start {name} started" in d.notes
    assert d.command == []  # the unit was diagnosed, not the command


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--unit", "x", "--pid", "1"), "give one of --pid PID, --system, --unit NAME,"),
        (("--unit", "x", "--", "sleep", "1"), "give one of --pid PID, --system, --unit NAME,"),
        (("--unit", "../x"), "'../x' is not a unit name"),
        (
            ("--unit", "hone-test-absent"),
            "unit hone-test-absent.service has no control group: no folder "
            "hone-test-absent.service is in /sys/fs/cgroup/systemd, /sys/fs/cgroup/unified (",
        ),
    ],
)
def test_bad_units_are_one_line(hone_cli, hone_home, args: tuple[str, ...], message: str) -> None:
    done = hone_cli("diagnose", *args)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"hone: {message}") and done.stderr.count("\n") == 1
    assert not any((hone_home / "diagnoses").glob("*"))


def test_a_unit_without_processes_is_one_line(hone_cli, hone_home, group) -> None:
    folder = group(V2, "system.slice")
    done = hone_cli("diagnose", "--unit", folder.name)
    assert done.returncode == 2
    assert done.stderr == (
        f"hone: unit {folder.name} has no processes: its control group ({folder}) holds none; "
        "is it running?\n"
    )
    assert not any((hone_home / "diagnoses").glob("*"))


def test_a_start_that_fails_is_one_line(hone_cli, hone_home) -> None:
    """The real systemctl, which fails where no systemd runs: its words, then hone's line."""
    done = hone_cli("diagnose", "--", "systemctl", "start", "hone-test-absent")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "hone: systemctl start hone-test-absent failed (exit code 1): no service started to "
        "diagnose"
    )
    assert not any((hone_home / "diagnoses").glob("*"))
