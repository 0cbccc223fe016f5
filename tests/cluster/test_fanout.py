"""Knobs on a host group over real ssh to real sshds (one network namespace per host)."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from cluster_bed import CONFIG, kill_9_once, project_yaml
from forked_hone import run_hone
from rich.console import Console

from benchmarks.cluster.netns import Testbed
from hone.cluster.project import cluster_of
from hone.cluster.restore import restore_project
from hone.cluster.ssh import control_folder
from hone.errors import ActuationError, HoneError
from hone.journal import Journal
from hone.journal.machine import location
from hone.project import load_project
from hone.tune.console import Reporter
from hone.tune.system import System
from hone.tune.views import show_study


def _load(tmp_path: Path, bed: Testbed, benchmark: str = "echo score: 1"):
    path = tmp_path / "hone.yaml"
    path.write_text(project_yaml(bed, benchmark))
    return load_project(path)


def _held_by() -> list[str]:
    """The journal of each setting this machine's records say hone left changed."""
    records = [json.loads(p.read_text()) for p in (location() / "left").glob("*")]
    return sorted(holder["journal"] for record in records for holder in record["holders"])


def _state(bed: Testbed, i: int) -> tuple[str, str]:
    return bed.sysctl(i, "net.core.somaxconn"), (bed.data(i) / "app.conf").read_text()


def test_group_knobs_applied_read_back_and_journaled_per_host(tmp_path: Path, hosts: Testbed):
    cluster = cluster_of(_load(tmp_path, hosts))
    assert cluster is not None
    cluster.prepare()
    cluster.apply({"backlog": "512", "threads": "8", "batch": "250"})
    for i in range(3):
        assert _state(hosts, i) == ("512", CONFIG.replace("4", "8").replace("100", "250"))
        assert (hosts.data(i) / "app.conf").stat().st_mode & 0o777 == 0o640  # mode kept
        journal = Journal.for_project_host("fanout", hosts.name(i))
        originals = {n: o.value for n, o in journal.originals().items()}
        assert originals == {"backlog": "4096", "threads": "4", "batch": "100"}
        assert journal.originals()["backlog"].spec["host"]["name"] == hosts.name(i)
    outcomes = restore_project("fanout")
    assert len(outcomes) == 9 and all(o.outcome.ok for o in outcomes)
    assert all(_state(hosts, i) == ("4096", CONFIG) for i in range(3))
    assert Journal.for_project_hosts("fanout") == []  # archived once every host is back


def test_one_host_failing_rolls_every_host_back(tmp_path: Path, hosts: Testbed):
    cluster = cluster_of(_load(tmp_path, hosts))
    assert cluster is not None
    cluster.prepare()
    cluster.apply({"backlog": "300", "threads": "2", "batch": "100"})
    before = [_state(hosts, i) for i in range(3)]
    hosts.read_only(1)  # h2 refuses writes to its file; its sysctl still changes first
    with pytest.raises(ActuationError) as failed:
        cluster.apply({"backlog": "700", "threads": "12", "batch": "500"})
    assert "h2" in str(failed.value) and "rolled back" in str(failed.value)
    assert [_state(hosts, i) for i in range(3)] == before
    hosts.read_only(1, False)
    cluster.apply({"backlog": "700", "threads": "12", "batch": "500"})  # the cluster goes on
    assert all(_state(hosts, i)[0] == "700" for i in range(3))
    restore_project("fanout")
    assert all(_state(hosts, i) == ("4096", CONFIG) for i in range(3))


def test_kill_9_of_the_controller_then_restore_brings_every_host_back(
    tmp_path: Path, hosts: Testbed, hone_home: Path
):
    # the baseline (4096) is measured at once; a trial's value makes the benchmark wait
    bench = "v=$(cat /proc/sys/net/core/somaxconn); echo score: $v; [ $v = 4096 ] || sleep 60"
    path = tmp_path / "hone.yaml"
    path.write_text(project_yaml(hosts, bench))
    env = {**os.environ, "HONE_HOME": str(hone_home)}
    command = [sys.executable, "-m", "hone", "tune", str(path)]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    kill_9_once(
        proc,
        lambda: all(hosts.sysctl(i, "net.core.somaxconn") != "4096" for i in range(3)),
        30,
        "no trial value reached every host",
    )
    assert all(hosts.sysctl(i, "net.core.somaxconn") != "4096" for i in range(3))
    done = run_hone("restore", "fanout", env=env, cwd=Path.cwd(), timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert all(_state(hosts, i) == ("4096", CONFIG) for i in range(3))
    for i in range(3):
        assert f"{hosts.name(i)}: backlog = '4096'  ok" in done.stdout
    assert not Journal.for_project("fanout").path.exists()  # the run's records archived too
    assert Journal.for_project_hosts("fanout") == []


def test_a_file_edited_on_a_host_meanwhile_is_not_overwritten(tmp_path: Path, hosts: Testbed):
    cluster = cluster_of(_load(tmp_path, hosts))
    assert cluster is not None
    cluster.prepare()
    edited = CONFIG + "added = by hand\n"
    (hosts.data(2) / "app.conf").write_text(edited)  # after hone read it
    with pytest.raises(ActuationError, match="changed on the host since hone read it"):
        cluster.apply({"backlog": "4096", "threads": "6", "batch": "100"})
    assert (hosts.data(2) / "app.conf").read_text() == edited
    assert all((hosts.data(i) / "app.conf").read_text() == CONFIG for i in (0, 1))
    cluster.apply({"backlog": "4096", "threads": "6", "batch": "100"})  # read afresh: it goes on
    assert (hosts.data(2) / "app.conf").read_text() == edited.replace("4", "6")
    restore_project("fanout")
    assert (hosts.data(2) / "app.conf").read_text() == edited


def test_shell_and_script_knobs_on_hosts_get_values_quoted(
    tmp_path: Path, hosts: Testbed, monkeypatch: pytest.MonkeyPatch
):
    target = hosts.mount / "mode.txt"
    scripts = tmp_path / "scripts" / "level"
    scripts.mkdir(parents=True)
    (scripts / "get.sh").write_text(f"cat {target}.level\n")
    (scripts / "set.sh").write_text(f'printf "%s" "$*" > {target}.level\n')
    monkeypatch.setenv("HONE_SCRIPT_PATH", str(tmp_path / "scripts"))
    for i in range(3):
        (hosts.data(i) / "mode.txt").write_text("plain")
        (hosts.data(i) / "mode.txt.level").write_text("1")
    text = project_yaml(hosts).split("knobs:\n")[0] + (
        "knobs:\n"
        "  mode:\n"
        "    type: categorical\n"
        '    values: [plain, "it\'s $(touch /tmp/hone-pwned) a;b"]\n'
        f"    shell: {{get: 'cat {target}', set: 'printf %s $value > {target}'}}\n"
        "    group: brokers\n"
        "  level: {type: int, range: [1, 9], script: {name: level}, group: brokers}\n"
        "benchmark: 'echo score: 1'\n"
        "metrics:\n  score: {pattern: 'score: (\\d+)', direction: maximize}\n"
    )
    (tmp_path / "hone.yaml").write_text(text)
    cluster = cluster_of(load_project(tmp_path / "hone.yaml"))
    assert cluster is not None
    cluster.prepare()
    hostile = "it's $(touch /tmp/hone-pwned) a;b"
    cluster.apply({"mode": hostile, "level": "7"})
    for i in range(3):
        assert (hosts.data(i) / "mode.txt").read_text() == hostile
        assert (hosts.data(i) / "mode.txt.level").read_text() == "7"
    assert not Path("/tmp/hone-pwned").exists()
    restore_project("fanout")
    assert all((hosts.data(i) / "mode.txt").read_text() == "plain" for i in range(3))
    assert all((hosts.data(i) / "mode.txt.level").read_text() == "1" for i in range(3))


def test_a_host_gone_mid_study_keeps_its_journal_until_it_is_back(tmp_path: Path, hosts: Testbed):
    cluster = cluster_of(_load(tmp_path, hosts))
    assert cluster is not None
    cluster.prepare()
    cluster.apply({"backlog": "600", "threads": "5", "batch": "100"})
    hosts.stop_sshd(2)
    try:
        with pytest.raises(HoneError) as failed:  # not a trial failure: the study must stop
            cluster.apply({"backlog": "900", "threads": "9", "batch": "100"})
        assert not isinstance(failed.value, ActuationError)
        assert "h3" in str(failed.value) and "roll-back failed on h3" in str(failed.value)
        assert all(_state(hosts, i)[0] == "600" for i in (0, 1))  # rolled back
        outcomes = restore_project("fanout")
        assert {o.host for o in outcomes if not o.outcome.ok} == {"h3"}
        assert all(_state(hosts, i) == ("4096", CONFIG) for i in (0, 1))
        left = Journal.for_project_hosts("fanout")
        assert [j.path.stem.rsplit("@", 1)[1] for j in left] == ["h3"]
        assert _held_by() == [str(left[0].path)] * 2  # h3's sysctl and its app.conf: still held
        # what a run says as it stops: the journal that is kept, ssh's words once
        project = load_project(tmp_path / "hone.yaml")
        system = System(project, Journal.for_project("fanout"), Reporter())
        with pytest.raises(HoneError) as kept:
            system.restore()
        said = str(kept.value)
        assert f"journal kept: {left[0].path};" in said and "hone restore fanout" in said, said
        assert "ssh: connect to host" in said and "ssh: ssh:" not in said, said
    finally:
        hosts.start_sshd(2)
    outcomes = restore_project("fanout")
    assert outcomes and all(o.outcome.ok for o in outcomes)
    assert _state(hosts, 2) == ("4096", CONFIG)
    assert Journal.for_project_hosts("fanout") == [] and _held_by() == []


#: A host whose port 22 answers every connection by closing it (no sshd: each ssh fails at
#: once); it counts the connections in the file it is given.
CLOSER = """
import socket, sys
server = socket.create_server((sys.argv[1], 22))
open(sys.argv[2], "w").close()
while True:
    conn, _ = server.accept()
    conn.close()
    with open(sys.argv[2], "a") as counted:
        counted.write("x")
"""


def test_restore_tries_a_host_it_cannot_reach_once_not_once_per_knob(
    tmp_path: Path, hosts: Testbed
):
    """Every ssh call to a host that does not answer costs ssh's timeouts (tens of seconds
    when the host hangs): its knobs all fail for the one reason found by one connection,
    instead of a connection per knob and step; the other hosts are restored."""
    cluster = cluster_of(_load(tmp_path, hosts))
    assert cluster is not None
    cluster.prepare()
    cluster.apply({"backlog": "600", "threads": "5", "batch": "250"})
    hosts.stop_sshd(1)
    counted = tmp_path / "connections"
    argv = ["ip", "netns", "exec", hosts.namespace(1), sys.executable, "-c", CLOSER]
    closer = subprocess.Popen([*argv, hosts.address(1), str(counted)])
    try:
        while not counted.exists():
            assert closer.poll() is None
        outcomes = restore_project("fanout")
        failed = [o for o in outcomes if not o.outcome.ok]
        assert {o.host for o in failed} == {"h2"} and len(failed) == 3, outcomes
        assert all("ssh" in str(o.outcome.error) for o in failed), failed
        assert len(counted.read_text()) == 1  # one try, not one per knob (4 before)
        assert _state(hosts, 0) == ("4096", CONFIG) and _state(hosts, 2) == ("4096", CONFIG)
    finally:
        closer.kill()
        closer.wait()
        hosts.start_sshd(1)
    assert all(o.outcome.ok for o in restore_project("fanout"))
    assert _state(hosts, 1) == ("4096", CONFIG)


def test_a_long_hone_home_still_reaches_the_hosts(
    tmp_path: Path, hosts: Testbed, monkeypatch: pytest.MonkeyPatch
):
    """A master connection's socket lived in HONE_HOME/ssh: past some 70 characters of
    HONE_HOME, ssh refused every host (`path ... too long for Unix domain socket`). The
    sockets go to a short private folder of their own then."""
    home = tmp_path / ("a-state-folder-with-a-long-name" * 3)
    monkeypatch.setenv("HONE_HOME", str(home))
    cluster = cluster_of(_load(tmp_path, hosts))
    assert cluster is not None
    try:
        cluster.prepare()
        cluster.apply({"backlog": "512", "threads": "8", "batch": "250"})
        assert _state(hosts, 1)[0] == "512"
        assert all(o.outcome.ok for o in restore_project("fanout"))
        assert all(_state(hosts, i) == ("4096", CONFIG) for i in range(3))
        sockets = control_folder()
        assert len(str(sockets)) < 60 and (sockets.stat().st_mode & 0o777) == 0o700
    finally:
        for host in cluster.hosts.values():
            host.stop_master()
        shutil.rmtree(control_folder())  # the masters' locks are left in it


def test_the_benchmarks_host_gone_stops_the_study_instead_of_failing_every_trial(
    tmp_path: Path, hosts: Testbed, hone_cli
):
    """h3 runs the benchmark and holds no knob; its second reading (the first search trial's)
    kills h3's sshd and every session it holds. That trial fails saying the connection was
    lost (it said `benchmark exited 255` and nothing else), and the study stops with one line
    and every knob put back, instead of failing every trial left (and the confirmation's)
    for a reason no configuration caused, each told to the optimiser as the configuration's
    failure."""
    gone = tmp_path / "gone.sh"  # the sshd $1 and every process under it, killed at once
    gone.write_text(
        "tree=$(awk -v root=$1 '{up[$1] = $4} END {n = 1; q[1] = root; all = root;"
        ' for (i = 1; i <= n; i++) for (p in up) if (up[p] == q[i]) {q[++n] = p; all = all " " p}'
        " print all}' /proc/[0-9]*/stat 2>/dev/null)\nkill -9 $tree\n"
    )
    count = hosts.root / "hosts" / hosts.name(2) / "home" / "count"
    bench = "n=$(($(cat count 2>/dev/null || echo 0) + 1)); echo $n > count; "
    bench += f"[ $n -lt 2 ] || sh {gone} {hosts.pids[2]}; echo score: 1"
    text = project_yaml(hosts, bench).replace(
        hosts.hosts_yaml({"brokers": [0, 1, 2]}), hosts.hosts_yaml({"brokers": [0, 1], "c": [2]})
    )
    (tmp_path / "hone.yaml").write_text(text.replace("host: h1", "host: h3"))
    try:
        result = hone_cli("tune", str(tmp_path / "hone.yaml"), "--no-why")
    finally:
        hosts.start_sshd(2)
        count.unlink(missing_ok=True)
    out = result.stdout + result.stderr
    assert result.returncode == 2, out
    assert "failed: benchmark exited 255: host h3" in out and "connection was lost" in out, out
    last = out.strip().splitlines()[-1]
    assert last.startswith("hone: stopped, every knob put back: the benchmark's host cannot be"), (
        out
    )
    assert out.count("failed:") == 1, out  # one trial, not the budget and the confirmation
    assert all(_state(hosts, i) == ("4096", CONFIG) for i in (0, 1))


def _ssh_processes(control: Path) -> list[int]:
    """The ssh processes of one master socket, by their command lines."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and str(control).encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_a_master_connection_killed_outright_is_replaced_not_leaked(tmp_path: Path, hosts: Testbed):
    """A master killed with SIGKILL (an OOM kill, a service stop killing its control group)
    leaves its socket. ssh would not make a new master on that name: each connect left one
    more `ssh -f -N` running for good as a plain connection (and its session on the host),
    and every command warned `Control socket connect(...): Connection refused` and made a
    handshake of its own. The dead socket is removed and a new master takes its place."""
    host = _load(tmp_path, hosts).hosts["h2"]
    host.connect()
    (master,) = _ssh_processes(host.control_path())
    os.kill(master, signal.SIGKILL)
    while master in _ssh_processes(host.control_path()):
        time.sleep(0.02)
    assert host.control_path().exists()  # what the kill left behind
    try:
        for _ in range(3):
            host.connect()
        assert len(_ssh_processes(host.control_path())) == 1
        done = host.run("echo hi")
        assert (done.returncode, done.stdout, done.stderr) == (0, "hi\n", "")
    finally:
        host.stop_master()
    assert _ssh_processes(host.control_path()) == []


def test_masters_started_at_once_leave_one_connection(tmp_path: Path, hosts: Testbed):
    """Processes that reach one host at once (hone runs of two projects on the same hosts)
    each started a master on the same socket name: ssh gives the name to one, and the others
    stayed running for good as plain connections. They now take turns: one master."""
    host = _load(tmp_path, hosts).hosts["h2"]
    try:
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda _: host.connect(), range(4)))
        assert len(_ssh_processes(host.control_path())) == 1
    finally:
        host.stop_master()
    assert _ssh_processes(host.control_path()) == []


def test_hosts_that_start_different_get_a_trials_value_and_their_own_baseline(
    tmp_path: Path, hosts: Testbed
):
    """h3 starts with 6 threads, the others with 4: the baseline is each host's own, but a
    trial's 4 (the first host's original) is 4 on every host, h3 included, as recorded."""
    (hosts.data(2) / "app.conf").write_text(CONFIG.replace("4", "6"))
    system = System(_load(tmp_path, hosts), Journal.for_project("fanout"), Reporter())
    assert system.cluster is not None
    system.cluster.prepare()
    base = system.read_baseline()
    assert base == {"backlog": 4096, "threads": 4, "batch": 100}
    system.apply({**base, "backlog": 512})
    assert all(_state(hosts, i) == ("512", CONFIG) for i in range(3))
    system.apply(base)
    assert [_state(hosts, i)[1] for i in range(3)] == [CONFIG, CONFIG, CONFIG.replace("4", "6")]
    assert all(o.outcome.ok for o in restore_project("fanout"))


def test_a_host_unreachable_at_the_start_leaves_no_journal_behind(tmp_path: Path, hosts: Testbed):
    """The run stops before any change; the originals it read on the other hosts are not kept,
    else the next run would take them as originals and write them back over a value set on a
    host in between."""
    hosts.stop_sshd(1)
    try:
        with pytest.raises(ActuationError, match=r"h2 .*ssh cannot connect"):
            cluster_of(_load(tmp_path, hosts)).prepare()  # type: ignore[union-attr]
        assert Journal.for_project_hosts("fanout") == [] and _held_by() == []
        assert all(_state(hosts, i) == ("4096", CONFIG) for i in range(3))
    finally:
        hosts.start_sshd(1)
    hosts.set_sysctl(0, "net.core.somaxconn", "3000")  # set by hand before the next run
    cluster = cluster_of(_load(tmp_path, hosts))
    assert cluster is not None
    cluster.prepare()
    cluster.apply({"backlog": "512", "threads": "8", "batch": "250"})
    assert all(o.outcome.ok for o in restore_project("fanout"))
    assert _state(hosts, 0) == ("3000", CONFIG)  # its own value, not the one read before
    # the benchmark's host holds no knob: unreachable, it stops the run before any change too
    (tmp_path / "hone.yaml").write_text(
        project_yaml(hosts)
        .replace(
            hosts.hosts_yaml({"brokers": [0, 1, 2]}),
            hosts.hosts_yaml({"brokers": [0, 1], "c": [2]}),
        )
        .replace("host: h1", "host: h3")
    )
    hosts.stop_sshd(2)
    try:
        with pytest.raises(ActuationError, match=r"h3 .*ssh cannot connect"):
            cluster_of(load_project(tmp_path / "hone.yaml")).prepare()  # type: ignore[union-attr]
    finally:
        hosts.start_sshd(2)
    assert Journal.for_project_hosts("fanout") == []


def test_a_login_shell_that_refuses_is_named_with_what_it_said(tmp_path: Path, hosts: Testbed):
    """A host whose login shell exits before it reads hone's script (bash under sshd reads
    ~/.bashrc; a nologin shell does the same) says why on its output: the run stops before any
    change with those words, not `shell exited 1`."""
    rc = hosts.root / "hosts" / hosts.name(1) / "home" / ".bashrc"
    rc.write_text("echo 'h2 is in maintenance: no logins'; exit 1\n")
    try:
        with pytest.raises(ActuationError) as error:
            cluster_of(_load(tmp_path, hosts)).prepare()  # type: ignore[union-attr]
    finally:
        rc.unlink()
    said = str(error.value)
    assert said.startswith("host h2 ") and "exited 1: h2 is in maintenance" in said, said
    assert Journal.for_project_hosts("fanout") == []


def test_a_whole_study_on_the_cluster_leaves_every_host_as_it_was(
    tmp_path: Path, hosts: Testbed, hone_cli
):
    path = tmp_path / "hone.yaml"
    path.write_text(project_yaml(hosts, "cat /proc/sys/net/core/somaxconn | sed s/^/score:\\ /"))
    result = hone_cli("tune", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert all(_state(hosts, i) == ("4096", CONFIG) for i in range(3))
    shown = hone_cli("show", "fanout", "--json")
    assert shown.returncode == 0, shown.stderr
    study = json.loads(shown.stdout)["study"]
    assert study["failures"] == 0 and study["trials"] >= 4, study  # baseline + 3 trials
    assert study["state"] == "finished", study


def test_a_study_that_cannot_put_a_host_back_says_it_once_and_show_says_why(
    tmp_path: Path, hosts: Testbed, hone_cli
):
    """The study's end cannot restore h2: the run's last line names it (once: the second
    try's words, not a warning and then the same line again), `hone show` says why the study
    stopped, and `hone restore` puts h2 back once it takes writes again."""
    # on the controller: its second reading (the search trial's) leaves h2's directory
    # read-only, so the knobs can no longer be put back there at the study's end
    spoil = f"nsenter -t {hosts.pids[1]} -m mount -o remount,bind,ro {hosts.mount}"
    bench = "n=$(($(cat count 2>/dev/null || echo 0) + 1)); echo $n > count; "
    bench += f"[ $n -lt 2 ] || {spoil}; echo score: $n"
    text = project_yaml(hosts).replace("{command: 'echo score: 1', host: h1}", f"'{bench}'")
    text = text.replace("budget: 3", "budget: 1, confirm: {candidates: 0}")
    (tmp_path / "hone.yaml").write_text(text)
    try:
        result = hone_cli("tune", str(tmp_path / "hone.yaml"), "--no-why")
        said = result.stdout + result.stderr
        assert result.returncode == 2, said
        assert said.count("could not restore: h2 ") == 1, said
        assert "warning: could not restore" not in said, said
        shown = io.StringIO()
        show_study(Console(file=shown, width=10_000), "fanout", None)
        assert "\nstopped: could not restore: h2 " in shown.getvalue(), shown.getvalue()
        assert _state(hosts, 1)[1] != CONFIG  # the trial's threads are still there
    finally:
        hosts.read_only(1, False)
    assert all(o.outcome.ok for o in restore_project("fanout"))
    assert all(_state(hosts, i) == ("4096", CONFIG) for i in range(3))


def test_a_host_knob_moved_to_another_file_is_refused_a_new_key_file_is_not(
    tmp_path: Path, hosts: Testbed
):
    """Host journals hold originals per setting, as on the controller: a project edited while
    they are kept, whose knob now edits another file, would take the old file's original as
    the new file's baseline (and write it there) and never record the new file's own. A new
    way to reach the same host (another key file) is the same setting, and `restore` must use
    it: the old key is gone."""
    cluster = cluster_of(_load(tmp_path, hosts))
    assert cluster is not None
    cluster.prepare()
    cluster.apply({"backlog": "512", "threads": "8", "batch": "250"})
    changed = [_state(hosts, i) for i in range(3)]
    for i in range(3):
        (hosts.data(i) / "other.conf").write_text("threads = 2\n")
    moved = project_yaml(hosts).replace(
        f"{{file: {hosts.mount / 'app.conf'}, key: threads}}",
        f"{{file: {hosts.mount / 'other.conf'}, key: threads}}",
    )
    path = tmp_path / "moved" / "hone.yaml"
    path.parent.mkdir()
    path.write_text(moved)
    with pytest.raises(HoneError) as refused:
        cluster_of(load_project(path)).prepare()  # type: ignore[union-attr]
    line = str(refused.value)
    assert "knob threads: its original value was recorded for" in line, line
    assert "app.conf" in line and "other.conf" in line and "hone restore" in line
    assert [_state(hosts, i) for i in range(3)] == changed  # nothing changed
    assert all((hosts.data(i) / "other.conf").read_text() == "threads = 2\n" for i in range(3))

    keys = tmp_path / "keys"
    keys.mkdir()
    identity = keys / "id"
    identity.write_bytes(Path(hosts.identity).read_bytes())
    identity.chmod(0o600)
    path.write_text(
        project_yaml(hosts).replace(f"identity: {hosts.identity}", f"identity: {identity}")
    )
    for host in cluster.hosts.values():
        host.stop_master()
    again = cluster_of(load_project(path))
    assert again is not None
    again.prepare()  # the same settings, reached with another key: accepted
    assert again.baseline() == {"backlog": "4096", "threads": "4", "batch": "100"}
    for host in again.hosts.values():
        host.stop_master()
    old = Path(hosts.identity)
    hidden = old.with_name(old.name + ".hidden")
    old.rename(hidden)  # the old key no longer opens the hosts
    try:
        outcomes = restore_project("fanout")
    finally:
        hidden.rename(old)
    assert outcomes and all(o.outcome.ok for o in outcomes), outcomes
    assert all(_state(hosts, i) == ("4096", CONFIG) for i in range(3))
