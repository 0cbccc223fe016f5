"""A real 3-broker Kafka cluster (KRaft: every broker is also a controller, no ZooKeeper) and
Kafka's own producer and consumer performance tools as its benchmark.

Brokers listen on the addresses given (loopback ports by default; the address of a network
namespace when each "host" is one: `prefix` puts a command in front of each broker's, such as
`ip netns exec NAME`). Every load is bounded: a producer run sends a fixed number of records
and every command has a timeout. The jars come from Maven Central as the analyze benchmark
fetches them (`kafka_libs`).

    python -m benchmarks.scale.kafka_cluster --repeats 5   # the benchmark's noise here
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import os
import re
import signal
import statistics
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.analyze.workloads import free_port, kafka_libs

TIMEOUT = 120  # seconds any one command may take
#: JVM options that start a JVM quickly: C1 alone and the serial collector (most of a start-up
#: on a few shared cores is the JIT's and the GC threads' work). Kafka's command-line tools
#: always run so; brokers and the performance tools when asked (tests), since their code is
#: less optimised.
QUICK = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
#: What a broker logs once it is registered and unfenced (KafkaRaftServer, INFO).
STARTED = "Kafka Server started"
#: Brokers log warnings and the line above.
LOG4J = (
    "log4j.rootLogger=WARN, stdout\n"
    "log4j.appender.stdout=org.apache.log4j.ConsoleAppender\n"
    "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout\n"
    "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
    "log4j.logger.kafka.server.KafkaRaftServer=INFO\n"
)


@dataclass
class Broker:
    node: int
    host: str  # the address it listens on
    port: int
    controller: int
    data: Path
    prefix: list[str] = field(default_factory=list)  # e.g. ["ip", "netns", "exec", "h1"]

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def brokers(root: Path, hosts: Sequence[str] = ("127.0.0.1",) * 3, prefixes=None) -> list[Broker]:
    """One broker per host address, each with its own ports and data folder under `root`."""
    prefixes = prefixes or [[] for _ in hosts]
    return [
        Broker(i + 1, host, free_port(), free_port(), root / f"broker-{i + 1}", list(prefix))
        for i, (host, prefix) in enumerate(zip(hosts, prefixes, strict=True))
    ]


def server_properties(broker: Broker, cluster: list[Broker], settings: dict[str, str]) -> str:
    """A broker's configuration: the KRaft quorum of all brokers, replication 3 for Kafka's own
    topics, then `settings` (the knobs a study tunes) last, so they win."""
    voters = ",".join(f"{b.node}@{b.host}:{b.controller}" for b in cluster)
    lines = {
        "process.roles": "broker,controller",
        "node.id": str(broker.node),
        "controller.quorum.voters": voters,
        "listeners": f"PLAINTEXT://{broker.host}:{broker.port},"
        f"CONTROLLER://{broker.host}:{broker.controller}",
        "advertised.listeners": f"PLAINTEXT://{broker.address}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(broker.data / "log"),
        "num.partitions": "3",
        "default.replication.factor": str(min(3, len(cluster))),
        "offsets.topic.replication.factor": str(min(3, len(cluster))),
        "transaction.state.log.replication.factor": str(min(3, len(cluster))),
        "transaction.state.log.min.isr": "1",
        "log.retention.bytes": "268435456",
        "log.segment.bytes": "67108864",
        # The whole cluster stops at once (a trial's restart, the end): a controlled shutdown
        # then waits for a controller that is going down too, the last broker until SIGKILL
        # (20 s), and a broker not fenced at its stop is let back in only once its session
        # timeout (9 s by default) has passed: off, and 3 s, a restart takes seconds.
        "controlled.shutdown.enable": "false",
        "broker.session.timeout.ms": "3000",
        "broker.heartbeat.interval.ms": "500",
        # After such a restart each controller first waits out the old leader (fetch timeout,
        # 2 s by default) and then an election timeout (1 s): on one machine's bridge, 1 s and
        # 0.5 s elect the new leader sooner.
        "controller.quorum.fetch.timeout.ms": "1000",
        "controller.quorum.election.timeout.ms": "500",
        **settings,
    }
    return "".join(f"{key}={value}\n" for key, value in lines.items())


def _java(heap: str = "-Xmx512m", options: Sequence[str] = ()) -> list[str]:
    return ["java", heap, *options, "-cp", f"{kafka_libs()}/*"]


def _tool(heap: str = "-Xmx128m") -> list[str]:
    """A JVM for one of Kafka's command-line tools: it runs for a second, so it starts quick."""
    return _java(heap, QUICK)


@contextlib.contextmanager
def running(
    cluster: list[Broker], settings: dict[str, str] | None = None, jvm: Sequence[str] = ()
) -> Iterator[str]:
    """Format and start every broker (`jvm`: more options for its JVM, such as QUICK), wait
    until all serve, yield the bootstrap list; kill them all (process groups, SIGKILL) on exit:
    their data is of no further use, and a clean stop of the whole quorum at once costs seconds
    (the last Raft leader waits 5 s for a successor)."""
    cluster_id = kafka_id(uuid.uuid4())
    procs = []
    try:
        for broker in cluster:
            broker.data.mkdir(parents=True, exist_ok=True)
            config = broker.data / "server.properties"
            config.write_text(server_properties(broker, cluster, settings or {}))
            (broker.data / "log4j.properties").write_text(LOG4J)
        with ThreadPoolExecutor(len(cluster)) as pool:  # a JVM each: at once, not in turn
            list(pool.map(lambda b: _format(b, cluster_id), cluster))
        for broker in cluster:
            log = (broker.data / "broker.log").open("w")
            log4j = f"-Dlog4j.configuration=file:{broker.data / 'log4j.properties'}"
            procs.append(
                subprocess.Popen(
                    [*broker.prefix, *_java("-Xmx512m", jvm), log4j, "kafka.Kafka",
                     str(broker.data / "server.properties")],
                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                )
            )  # fmt: skip
        bootstrap = ",".join(b.address for b in cluster)
        _wait_ready(cluster, procs, bootstrap)
        yield bootstrap
    finally:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        for proc in procs:
            proc.wait()


def kafka_id(value: uuid.UUID) -> str:
    """A Kafka cluster id: a UUID in URL-safe base64 without padding (what `StorageTool
    random-uuid` prints, without a JVM's start-up)."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def _format(broker: Broker, cluster_id: str) -> None:
    subprocess.run(
        [*broker.prefix, *_tool(), "kafka.tools.StorageTool", "format", "-t", cluster_id,
         "-c", str(broker.data / "server.properties"), "--ignore-formatted"],
        check=True, capture_output=True, timeout=TIMEOUT,
    )  # fmt: skip


def _wait_ready(
    cluster: list[Broker], procs: list[subprocess.Popen], bootstrap: str, timeout: float = TIMEOUT
) -> None:
    """Until every broker has logged that it started (registered and unfenced), then until
    the cluster reports every broker (kafka-broker-api-versions lists each): the tool is a JVM
    of its own, started once the brokers' start-up no longer competes with it."""
    deadline = time.monotonic() + timeout
    tool = [*_tool(), "kafka.admin.BrokerApiVersionsCommand"]
    while time.monotonic() < deadline:
        for broker, proc in zip(cluster, procs, strict=True):
            if proc.poll() is not None:
                raise RuntimeError(f"broker {broker.node} exited: see {broker.data / 'broker.log'}")
        if not all(STARTED in (b.data / "broker.log").read_text() for b in cluster):
            time.sleep(0.2)
            continue
        out = subprocess.run(
            [*cluster[0].prefix, *tool, "--bootstrap-server", bootstrap],
            capture_output=True, text=True, timeout=TIMEOUT,
        )  # fmt: skip
        if out.returncode == 0 and all(f"id: {b.node}" in out.stdout for b in cluster):
            return
        time.sleep(1)
    raise RuntimeError(f"the Kafka cluster at {bootstrap} is not up after {timeout:.0f} s")


def create_topic(
    bootstrap: str, topic: str, partitions: int = 3, replicas: int = 3, prefix=(), configs=None
):
    """The topic, with min.insync.replicas=2 and `configs` (retention, say)."""
    extra = [a for k, v in (configs or {}).items() for a in ("--config", f"{k}={v}")]
    subprocess.run(
        [*prefix, *_tool(), "org.apache.kafka.tools.TopicCommand", "--bootstrap-server",
         bootstrap, "--create", "--if-not-exists", "--topic", topic, "--partitions",
         str(partitions), "--replication-factor", str(replicas),
         "--config", "min.insync.replicas=2", *extra],
        check=True, capture_output=True, timeout=TIMEOUT,
    )  # fmt: skip


def describe_topic(bootstrap: str, topic: str, prefix=()) -> str:
    return subprocess.run(
        [*prefix, *_tool(), "org.apache.kafka.tools.TopicCommand", "--bootstrap-server",
         bootstrap, "--describe", "--topic", topic],
        check=True, capture_output=True, text=True, timeout=TIMEOUT,
    ).stdout  # fmt: skip


def produce(bootstrap: str, topic: str, records: int = 200_000, size: int = 100,
            props: dict[str, str] | None = None, prefix=(),
            jvm: Sequence[str] = ()) -> dict[str, float]:  # fmt: skip
    """ProducerPerformance with a fixed number of records (acks=all unless `props` says; `jvm`:
    more options for its JVM): records/s, MB/s and the average and 99th-percentile latency in ms
    of its summary line."""
    settings = {"bootstrap.servers": bootstrap, "acks": "all", **(props or {})}
    out = subprocess.run(
        [*prefix, *_java("-Xmx256m", jvm), "org.apache.kafka.tools.ProducerPerformance",
         "--topic", topic, "--num-records", str(records), "--record-size", str(size),
         "--throughput", "-1", "--producer-props", *(f"{k}={v}" for k, v in settings.items())],
        check=True, capture_output=True, text=True, timeout=TIMEOUT,
    ).stdout  # fmt: skip
    summary = out.strip().splitlines()[-1]
    numbers = re.search(
        r"([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency.*?"
        r"([\d.]+) ms 99th", summary,
    )  # fmt: skip
    if not numbers:
        raise RuntimeError(f"no summary in ProducerPerformance's output: {summary!r}")
    rate, mb, latency, p99 = map(float, numbers.groups())
    return {"records_per_s": rate, "mb_per_s": mb, "latency_ms": latency, "p99_ms": p99}


def consume(bootstrap: str, topic: str, messages: int, prefix=(), jvm: Sequence[str] = ()) -> float:
    """ConsumerPerformance reading `messages` records (`jvm`: more options for its JVM): MB/s."""
    out = subprocess.run(
        [*prefix, *_java("-Xmx256m", jvm), "org.apache.kafka.tools.ConsumerPerformance",
         "--bootstrap-server", bootstrap, "--topic", topic, "--messages", str(messages),
         "--timeout", str(TIMEOUT * 1000)],
        check=True, capture_output=True, text=True, timeout=TIMEOUT,
    ).stdout  # fmt: skip
    header, row = out.strip().splitlines()[-2:]
    columns = dict(zip(header.split(", "), row.split(", "), strict=False))
    return float(columns["MB.sec"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--records", type=int, default=200_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root, running(brokers(Path(root))) as bootstrap:
        create_topic(bootstrap, "bench")
        rates = [
            produce(bootstrap, "bench", args.records)["records_per_s"] for _ in range(args.repeats)
        ]
        mean = statistics.mean(rates)
        cv = statistics.stdev(rates) / mean if len(rates) > 1 else 0.0
        print(f"producer, 3 brokers, acks=all, {args.records} records of 100 bytes: "
              f"{mean:.0f} records/s, CV {100 * cv:.1f} % over {len(rates)} runs "
              f"({', '.join(f'{r:.0f}' for r in rates)})")  # fmt: skip


if __name__ == "__main__":
    main()
