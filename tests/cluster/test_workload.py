"""A group's workload restarted on its hosts when a knob needs it: a tiny HTTP server on each
namespace host that serves the config it read at start, so the restart is seen from outside."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_bed import CONFIG, kill_9_once
from forked_hone import run_hone

from benchmarks.cluster.netns import Testbed
from hone.cluster.project import cluster_of
from hone.cluster.restore import restore_project
from hone.cluster.workload import is_ready, start, stop
from hone.errors import ActuationError
from hone.journal import Journal
from hone.project import load_project

PORT = 8089
#: Serves app.conf as it was at start; refuses to start with more than 12 threads.
SERVER = """import http.server, sys
text = open(sys.argv[1]).read()
conf = dict(line.split(" = ", 1) for line in text.splitlines() if " = " in line)
if int(conf["threads"]) > 12:
    sys.exit("threads above 12")
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(text.encode())
    def log_message(self, *args):
        pass
http.server.HTTPServer(("0.0.0.0", int(sys.argv[2])), Handler).serve_forever()
"""


def _project(bed: Testbed, server: Path, benchmark: str = "echo score: 1", budget: int = 3) -> str:
    mnt, conf = bed.mount, bed.mount / "app.conf"
    start = (
        f"cd {mnt} && echo x >> starts && "
        f"{{ nohup python3 {server} app.conf {PORT} >server.log 2>&1 & echo $! > server.pid; }}"
    )
    stop_ = (
        f"cd {mnt}; [ -f server.pid ] || exit 0; p=$(cat server.pid); kill $p 2>/dev/null; "
        # gone once a zombie: its new parent (the host's init) may take seconds to reap it
        "while kill -0 $p 2>/dev/null && ! grep -qs zombie /proc/$p/status; do sleep 0.05; done; "
        "rm -f server.pid"
    )
    ready = f"curl -sf -o /dev/null http://127.0.0.1:{PORT}/"
    hosts = "\n".join(
        f"      - {{name: {bed.name(i)}, address: {bed.address(i)}}}" for i in range(3)
    )
    return (
        f"name: served\nssh: {{identity: {bed.identity}, known_hosts: {bed.known_hosts}}}\n"
        "hosts:\n  brokers:\n    hosts:\n" + hosts + "\n"
        f"    workload: {{start: '{start}', stop: '{stop_}', ready: '{ready}', ready_timeout: 3}}\n"
        "knobs:\n"
        "  backlog: {type: int, range: [128, 1024], sysctl: net.core.somaxconn, group: brokers}\n"
        f"  threads: {{type: int, range: [1, 12], config: {{file: {conf}, key: threads}},"
        " group: brokers}\n"
        f"benchmark: {{command: '{benchmark}', host: h1}}\n"
        "metrics:\n  score: {pattern: 'score: (\\d+)', direction: maximize}\n"
        f"tuning: {{engine: random, budget: {budget}, baseline: 1, seed: 1, apply: never}}\n"
    )


@pytest.fixture
def served(hosts: Testbed, tmp_path: Path) -> Iterator[Path]:
    """The project file; every host's server stopped afterwards, whatever the test left."""
    server = tmp_path / "server.py"
    server.write_text(SERVER)
    for i in range(3):
        (hosts.data(i) / "starts").unlink(missing_ok=True)
    path = tmp_path / "hone.yaml"
    path.write_text(_project(hosts, server))
    yield path
    project = load_project(path)
    for host in project.hosts.values():
        stop(host, project.group_workloads["brokers"])


def _serving(bed: Testbed, i: int) -> str | None:
    """The config host i's server read when it started, asked over the bridge; None if down."""
    try:
        with urllib.request.urlopen(f"http://{bed.address(i)}:{PORT}/", timeout=2) as answer:
            return answer.read().decode()
    except OSError:
        return None


def _starts(bed: Testbed, i: int) -> int:
    path = bed.data(i) / "starts"
    return len(path.read_text().split()) if path.exists() else 0


def test_a_restart_knob_restarts_the_workload_only_where_it_changed(served: Path, hosts: Testbed):
    (hosts.data(2) / "app.conf").write_text(CONFIG.replace("4", "8"))  # h3 starts at 8
    project = load_project(served)
    assert project.knob("threads").restart and not project.knob("backlog").restart
    cluster = cluster_of(project)
    assert cluster is not None
    hosts.stop_sshd(2)
    try:  # a host unreachable: no workload is started anywhere, no journal kept
        with pytest.raises(ActuationError, match="h3"):
            cluster.prepare()
    finally:
        hosts.start_sshd(2)
    assert [_starts(hosts, i) for i in range(3)] == [0, 0, 0]
    assert Journal.for_project_hosts("served") == []
    cluster.prepare()  # not running: started for the run
    assert [_starts(hosts, i) for i in range(3)] == [1, 1, 1]
    assert cluster.apply({"backlog": "300", "threads": "8"}) == {"h1", "h2"}
    assert [_starts(hosts, i) for i in range(3)] == [2, 2, 1]  # h3 already had 8
    assert all("threads = 8" in (_serving(hosts, i) or "") for i in range(3))
    assert cluster.apply({"backlog": "500", "threads": "8"}) == set()  # a sysctl: no restart
    assert [_starts(hosts, i) for i in range(3)] == [2, 2, 1]
    outcomes = restore_project("served")
    assert all(o.outcome.ok for o in outcomes), outcomes
    assert {(o.host, o.outcome.value) for o in outcomes if "workload" in o.outcome.name} == {
        (f"h{i}", "stopped") for i in (1, 2, 3)
    }
    assert all(_serving(hosts, i) is None for i in range(3))  # left as found: down
    assert (hosts.data(0) / "app.conf").read_text() == CONFIG


def test_a_failed_restart_rolls_every_host_back_and_restarts_it(served: Path, hosts: Testbed):
    project = load_project(served)
    workload = project.group_workloads["brokers"]
    for host in project.hosts.values():
        start(host, workload)  # running before hone: restore leaves it running
    cluster = cluster_of(project)
    assert cluster is not None
    cluster.prepare()
    cluster.apply({"backlog": "300", "threads": "5"})
    hosts_conf = [(hosts.data(i) / "app.conf").read_text() for i in range(3)]
    # outside the knob's range on purpose: the server refuses it and never gets ready
    with pytest.raises(ActuationError) as failed:
        cluster.apply({"backlog": "300", "threads": "13"})
    assert "ready" in str(failed.value) and "rolled back" in str(failed.value)
    assert [(hosts.data(i) / "app.conf").read_text() for i in range(3)] == hosts_conf
    assert all("threads = 5" in (_serving(hosts, i) or "") for i in range(3))
    outcomes = restore_project("served")
    assert all(o.outcome.ok for o in outcomes), outcomes
    assert all(_serving(hosts, i) == (hosts.data(i) / "app.conf").read_text() for i in range(3))
    assert "threads = 4" in (_serving(hosts, 0) or "")
    assert all(is_ready(h, workload) for h in project.hosts.values())


def test_kill_9_of_the_controller_then_restore_restarts_every_host_on_its_originals(
    served: Path, hosts: Testbed, hone_home: Path
):
    project = load_project(served)
    for host in project.hosts.values():
        start(host, project.group_workloads["brokers"])
    # the baseline (4 threads) is measured at once; a trial's value makes the benchmark wait
    bench = (
        f"t=$(curl -sf http://127.0.0.1:{PORT}/ | sed -n s/^threads\\ =\\ //p); "
        "echo score: $t; [ $t = 4 ] || sleep 60"
    )
    served.write_text(_project(hosts, Path(served.parent / "server.py"), bench, budget=5))
    env = {**os.environ, "HONE_HOME": str(hone_home)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "hone", "tune", str(served)], env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    kill_9_once(
        proc,
        lambda: "threads = 4" not in (_serving(hosts, 0) or "threads = 4"),
        40,
        "no trial's restart reached h1",
    )
    assert "threads = 4" not in (_serving(hosts, 0) or "")
    done = run_hone("restore", "served", env=env, cwd=Path.cwd(), timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "workload brokers" in done.stdout, done.stdout
    for i in range(3):
        assert (hosts.data(i) / "app.conf").read_text() == CONFIG
        assert _serving(hosts, i) == CONFIG  # running, on the original config
    assert Journal.for_project_hosts("served") == []
