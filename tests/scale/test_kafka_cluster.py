"""The 3-broker Kafka test bed is a real cluster: KRaft quorum of three, a topic replicated on
every broker, records produced with acks=all and read back by Kafka's own tools."""

from __future__ import annotations

import re
from pathlib import Path

from benchmarks.scale.kafka_cluster import (
    QUICK,
    brokers,
    consume,
    create_topic,
    describe_topic,
    produce,
    running,
    server_properties,
)


def test_the_knobs_a_study_sets_win_over_the_beds_own(tmp_path: Path) -> None:
    cluster = brokers(tmp_path)
    text = server_properties(cluster[1], cluster, {"num.io.threads": "4", "num.partitions": "6"})
    lines = dict(line.split("=", 1) for line in text.splitlines())
    assert lines["num.io.threads"] == "4" and lines["num.partitions"] == "6"
    assert lines["node.id"] == "2" and len(lines["controller.quorum.voters"].split(",")) == 3


def test_three_brokers_replicate_and_serve_a_bounded_load(tmp_path: Path) -> None:
    cluster = brokers(tmp_path)
    with running(cluster, {"num.network.threads": "2"}, QUICK) as bootstrap:
        create_topic(bootstrap, "hone")
        description = describe_topic(bootstrap, "hone")
        isr = re.findall(r"Isr: ([\d,]+)", description)
        assert len(isr) == 3 and all(sorted(i.split(",")) == ["1", "2", "3"] for i in isr)
        result = produce(bootstrap, "hone", records=20_000, jvm=QUICK)
        assert result["records_per_s"] > 0 and result["p99_ms"] >= result["latency_ms"] > 0
        assert consume(bootstrap, "hone", 20_000, jvm=QUICK) > 0
    # stopped: no broker is left running
    assert all((b.data / "broker.log").exists() for b in cluster)
