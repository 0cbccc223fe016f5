"""examples/kafka-cluster end to end on the namespace test bed: 3 KRaft brokers and a client
host, each with its own sshd; `hone tune` for one trial restarts the brokers whose
server.properties changed, runs ProducerPerformance on the client, and leaves every host as it
was (files back, brokers running on them again)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.cluster.netns import available
from benchmarks.scale.kafka_case import BROKERS, QUICK_JVM, running_case, tune
from hone.cluster.workload import is_ready


@pytest.mark.timeout(400)
def test_the_kafka_example_tunes_the_cluster_and_leaves_it_as_it_was(tmp_path: Path) -> None:
    why = available()
    assert not why, f"no namespace test bed: {why} (scripts/setup installs what it needs)"
    with running_case(tmp_path, QUICK_JVM) as case:
        data = [case.bed.data(i) for i in range(BROKERS + 1)]
        files = [d / "server.properties" for d in data[:BROKERS]] + [
            data[-1] / "producer.properties"
        ]
        before = [f.read_text() for f in files]
        pids = [(d / "broker.pid").read_text() for d in data[:BROKERS]]
        # one trial, no confirmation, no warm-up runs: every restart is still real (the
        # trial's values, then restore). A confirmation round only restarted the brokers twice
        # more (the baseline's values, the candidate's), 10-13 s a restart and reading here;
        # rounds on the cluster bed are tests/cluster/test_host_metrics.py's
        result = tune(
            case, tmp_path, 1, 5_000, 1, "{candidates: 0, rounds: 1}", limit=300, warmup=False,
        )  # fmt: skip
        assert result["returncode"] == 0, (tmp_path / "tune.log").read_text()[-3000:]
        trials = result["study"]["trials"]
        assert not [t for t in trials if t["phase"] == "confirm"], trials
        search = [t for t in trials if t["phase"] == "search"]
        assert [t["state"] for t in search] == ["complete"], trials
        done = [t for t in trials if t["state"] == "complete"]
        assert all(t["metrics"]["throughput"] > 0 for t in done), done
        assert [f.read_text() for f in files] == before  # every host put back
        journals = sorted((tmp_path / "home" / "journal").glob("*@b*.done.jsonl"))
        assert len(journals) == BROKERS  # each broker's journal archived once it was back
        for journal in journals:
            ops = [json.loads(line)["op"] for line in journal.read_text().splitlines()]
            assert "restarting" in ops and ops[-1] == "restored", ops
        # restarted on the original files: new processes, every broker serving again
        assert all((d / "broker.pid").read_text() != p for d, p in zip(data, pids, strict=False))
        workload = case.workload()
        assert all(is_ready(h, workload) for h in case.hosts()[:BROKERS])
