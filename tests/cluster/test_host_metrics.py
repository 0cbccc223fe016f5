"""Metrics read on hosts of the cluster (a named host, or a group combined by a stated rule),
over real ssh to the namespace hosts, and in a whole study."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cluster_bed import CONFIG

from benchmarks.cluster.netns import Testbed
from hone.cluster.metrics import HostMetrics
from hone.errors import BenchmarkError, HoneError
from hone.project import load_project


def _project(tmp_path: Path, bed: Testbed, metrics: str) -> Path:
    """A knob on every host; the benchmark on h1 adds 5 to h1's counter file."""
    count = bed.mount / "count"
    bench = f"n=$(cat {count}); echo $((n + 5)) > {count}; echo score: 7"
    path = tmp_path / "hone.yaml"
    path.write_text(
        "name: hostmetrics\n" + bed.hosts_yaml({"brokers": [0, 1, 2]}) + "knobs:\n"
        "  backlog: {type: int, range: [128, 1024], sysctl: net.core.somaxconn, group: brokers}\n"
        f"benchmark: {{command: '{bench}', host: h1}}\n"
        "metrics:\n  score: {pattern: 'score: (\\d+)', direction: maximize}\n"
        + metrics
        + "tuning: {engine: random, budget: 2, baseline: 1, seed: 1, apply: never,"
        " confirm: {candidates: 1, rounds: 1}}\n"
    )
    return path


def _counters(bed: Testbed) -> None:
    for i, value in enumerate((10, 20, 30)):
        (bed.data(i) / "count").write_text(f"{value}\n")


def test_group_and_host_metrics_are_read_and_combined(tmp_path: Path, hosts: Testbed):
    _counters(hosts)
    count = hosts.mount / "count"
    metrics = (
        f"  total: {{command: 'cat {count}', group: brokers, aggregate: sum,"
        " direction: minimize, weight: 0}\n"
        f"  peak: {{command: 'echo n=$(cat {count})', pattern: 'n=(\\d+)', group: brokers,"
        " aggregate: max, direction: minimize, weight: 0}\n"
        f"  second: {{command: 'cat {count}', host: h2, direction: minimize, weight: 0}}\n"
        f"  grown: {{command: 'cat {count}', group: brokers, aggregate: sum, delta: true,"
        " direction: minimize, weight: 0}\n"
    )
    reader = HostMetrics(load_project(_project(tmp_path, hosts, metrics)))
    before = reader.before()
    assert before == {"grown": {"h1": 10.0, "h2": 20.0, "h3": 30.0}}  # only the deltas
    (hosts.data(0) / "count").write_text("15\n")  # what the benchmark does on h1
    (hosts.data(2) / "count").write_text("31\n")
    assert reader.after(before) == {"total": 66.0, "peak": 31.0, "second": 20.0, "grown": 6.0}
    (hosts.data(1) / "count").write_text("not a number\n")
    with pytest.raises(
        BenchmarkError, match="host h2: metric total: 'not a number' is not a number"
    ):
        reader.after(before)


def test_a_study_stores_the_metrics_read_on_hosts(tmp_path: Path, hosts: Testbed, hone_cli):
    _counters(hosts)
    count = hosts.mount / "count"
    metrics = (
        f"  grown: {{command: 'cat {count}', group: brokers, aggregate: sum, delta: true,"
        " direction: minimize, weight: 0}\n"
        f"  third: {{command: 'cat {count}', host: h3, direction: minimize, weight: 0}}\n"
    )
    result = hone_cli("tune", str(_project(tmp_path, hosts, metrics)))
    assert result.returncode == 0, result.stdout + result.stderr
    shown = json.loads(hone_cli("show", "hostmetrics", "--json").stdout)
    trials = shown["trials"]
    assert len(trials) >= 3 and all(t["state"] == "complete" for t in trials), trials
    # every run of the benchmark added 5 on h1 alone: the sum of growths over the group is 5
    assert {t["metrics"]["grown"] for t in trials} == {5.0}
    assert {t["metrics"]["third"] for t in trials} == {30.0}
    runs = int((hosts.data(0) / "count").read_text())
    assert runs >= 10 + 5 * len(trials)  # (confirmation rounds are trials too)
    assert all(hosts.sysctl(i, "net.core.somaxconn") == "4096" for i in range(3))
    assert all((hosts.data(i) / "app.conf").read_text() == CONFIG for i in range(3))


@pytest.mark.parametrize(
    ("metric", "words"),
    [
        ("{command: 'cat x', group: brokers, direction: maximize}", "need aggregate: sum, mean"),
        ("{command: 'cat x', group: nope, aggregate: sum, direction: maximize}", "no group 'nope'"),
        ("{command: 'cat x', host: zz, direction: maximize}", "no host 'zz'"),
        ("{command: 'cat x', host: h1, aggregate: max, direction: maximize}", "needs no aggregate"),
        ("{pattern: 'x (\\d+)', host: h1, direction: maximize}", "needs a command"),
        ("{pattern: 'x (\\d+)', delta: true, direction: maximize}", "needs a host or group"),
        ("{command: 'echo $out', host: h1, direction: maximize}", "not a host's"),
    ],
)
def test_mistakes_in_host_metrics_are_one_line(
    tmp_path: Path, bed: Testbed, metric: str, words: str
):
    path = _project(tmp_path, bed, f"  bad: {metric}\n")
    with pytest.raises(HoneError) as error:
        load_project(path)
    message = str(error.value)
    assert words in message and "\n" not in message, message
    assert "hone.yaml:" in message and "bad" in message, message
