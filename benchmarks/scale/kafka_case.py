"""A-Tune's Kafka case on the namespace test bed: 3 KRaft brokers and a client host, each a
network namespace with its own sshd, tuned by `hone tune` through examples/kafka-cluster.

    python -m benchmarks.scale.kafka_case --budget 40        # the case (about 30-40 min here)
    python -m benchmarks.scale.kafka_case --noise 10         # the benchmark's CV, no tuning

It brings the bed and the brokers up, writes the project from examples/kafka-cluster/hone.yaml.in
with the bed's ssh section, runs hone (its state in DIR/home), prints what hone confirmed, and
takes everything down: brokers killed, namespaces and bridge removed. Every load is bounded
(a fixed number of records, timeouts on every command)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from benchmarks.analyze.workloads import kafka_libs
from benchmarks.cluster.netns import Testbed
from benchmarks.scale.kafka_cluster import Broker, create_topic, kafka_id, server_properties
from hone.cluster.ssh import Host
from hone.cluster.workload import HostWorkload, start

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "kafka-cluster"
BROKERS = 3
#: The knobs' starting values, written out so that each knob reads a value (Kafka's defaults).
BROKER_DEFAULTS = {
    "num.network.threads": "3",
    "num.io.threads": "8",
    "socket.send.buffer.bytes": "102400",
    "socket.receive.buffer.bytes": "102400",
    # a full restart leaves partition leaders wherever they landed: put them back soon
    "leader.imbalance.check.interval.seconds": "5",
    "log.retention.check.interval.ms": "10000",
}
PRODUCER_DEFAULTS = {
    "batch.size": "16384",
    "linger.ms": "0",
    "compression.type": "none",
    "acks": "all",
}
#: JVM options for brokers that start quickly (broker.sh reads them from jvm.options in DIR),
#: for tests: the bed's three brokers start at once on the machine's cores at every trial, and
#: most of their start-up is the JIT's and the GC threads' work. C1 alone and the serial
#: collector start them in about 60 % of the time; they replicate and serve as before, with
#: less optimised code, so the case's own runs (main) keep the JVM's defaults.
QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: The topic's logs stay small: at most about 48 MB per partition and replica.
TOPIC = {"retention.bytes": "33554432", "segment.bytes": "16777216"}


@dataclass
class Case:
    """The bed with its brokers running; `project` writes the hone project over it."""

    bed: Testbed
    libs: Path

    def names(self) -> list[str]:
        return [f"b{i + 1}" for i in range(BROKERS)] + ["c1"]

    def hosts(self) -> list[Host]:
        return [
            Host(name, self.bed.address(i), identity=str(self.bed.identity),
                 known_hosts=str(self.bed.known_hosts))
            for i, name in enumerate(self.names())
        ]  # fmt: skip

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{self.bed.address(i)}:9092" for i in range(BROKERS))

    def workload(self) -> HostWorkload:
        script, mnt = EXAMPLE / "broker.sh", self.bed.mount
        return HostWorkload(
            start=f"{script} start {mnt} {self.libs}",
            stop=f"{script} stop {mnt}",
            ready=f"{script} ready {mnt}",
            ready_timeout=120,
        )

    def project(self, path: Path, records: int, tuning: str, warmup: bool = True) -> Path:
        pairs = zip(self.names(), self.hosts(), strict=True)
        flow = [f"{{name: {n}, address: {h.address}}}" for n, h in pairs]
        fields = {
            "IDENTITY": str(self.bed.identity),
            "KNOWN_HOSTS": str(self.bed.known_hosts),
            "BROKERS": "[" + ", ".join(flow[:BROKERS]) + "]",
            "CLIENTS": "[" + flow[BROKERS] + "]",
            "EXAMPLE": str(EXAMPLE),
            "DIR": str(self.bed.mount),
            "LIBS": str(self.libs),
            "RECORDS": str(records),
            "TUNING": tuning,
            "WARMUP": "true" if warmup else "false",
        }
        text = (EXAMPLE / "hone.yaml.in").read_text()
        for key, value in fields.items():
            text = text.replace(f"@{key}@", value)
        path.write_text(text)
        return path

    def benchmark_once(self, records: int) -> float:
        """One run of the project's benchmark on the client host: records/s."""
        client = self.bed.namespace(BROKERS)
        out = subprocess.run(
            ["ip", "netns", "exec", client, "java", "-Xmx256m", "-cp", f"{self.libs}/*",
             "org.apache.kafka.tools.ProducerPerformance", "--topic", "bench", "--num-records",
             str(records), "--record-size", "100", "--throughput", "-1", "--producer.config",
             str(self.bed.data(BROKERS) / "producer.properties")],
            check=True, capture_output=True, text=True, timeout=120,
        ).stdout.strip().splitlines()[-1]  # fmt: skip
        return float(out.split(" records/sec")[0].rsplit(" ", 1)[1])


@contextmanager
def running_case(root: Path, jvm: str = "") -> Iterator[Case]:
    """The bed (3 brokers + 1 client, the brokers with `jvm` as their extra JVM options), every
    broker started through its workload commands and the topic `bench` created; afterwards the
    bed goes down, its brokers killed with it (their data is of no further use, so a clean
    shutdown would only cost its seconds)."""
    bed = Testbed(root / "bed", BROKERS + 1).up()
    case = Case(bed, _shared_libs(root))
    try:
        _configure(case, jvm)
        hosts = case.hosts()[:BROKERS]
        with ThreadPoolExecutor(BROKERS) as pool:
            list(pool.map(lambda h: start(h, case.workload()), hosts))
        prefix = ["ip", "netns", "exec", bed.namespace(BROKERS)]
        create_topic(case.bootstrap, "bench", prefix=prefix, configs=TOPIC)
        yield case
    finally:
        bed.down()  # SIGKILL to every process left in the namespaces


def _shared_libs(root: Path) -> Path:
    """Kafka's jars where the hosts see them: each host's sshd has a home of its own over
    ~, where the jars are cached (hard links: no copy when on one file system)."""
    libs = root / "kafka-libs"
    if not libs.exists():
        try:
            shutil.copytree(kafka_libs(), libs, copy_function=os.link)
        except OSError:
            shutil.rmtree(libs, ignore_errors=True)
            shutil.copytree(kafka_libs(), libs)
    return libs


def _configure(case: Case, jvm: str) -> None:
    """server.properties, cluster.id and jvm.options (if any) in each broker's directory,
    producer.properties on the client; owned by root, 0644, as a package would leave them."""
    bed, mnt = case.bed, case.bed.mount
    cluster = [
        Broker(i + 1, bed.address(i), 9092, 9093, mnt, []) for i in range(BROKERS)
    ]  # fmt: skip
    cluster_id = kafka_id(uuid.uuid4())
    for i, broker in enumerate(cluster):
        settings = {**BROKER_DEFAULTS, "log.dirs": str(mnt / "kafka-logs")}
        (bed.data(i) / "server.properties").write_text(server_properties(broker, cluster, settings))
        (bed.data(i) / "cluster.id").write_text(cluster_id + "\n")
        if jvm:
            (bed.data(i) / "jvm.options").write_text(jvm + "\n")
    producer = {"bootstrap.servers": case.bootstrap, **PRODUCER_DEFAULTS}
    text = "".join(f"{k}={v}\n" for k, v in producer.items())
    (bed.data(BROKERS) / "producer.properties").write_text(text)


def tune(
    case: Case,
    root: Path,
    budget: int,
    records: int,
    baseline: int,
    confirm: str,
    options: tuple[str, ...] = (),
    limit: float = 3600,
    warmup: bool = True,
) -> dict:
    """`hone tune` on the case's project; its study as `hone show --json` gives it. The winner
    is confirmed, never applied (`--apply never`): the bed is taken down next, and the shared
    kernel's vm.* value must go back to what it was. Stopped with SIGTERM after `limit`
    seconds, so it still puts every host back."""
    tuning = f"{{budget: {budget}, baseline: {baseline}, confirm: {confirm}, seed: 1}}"
    project = case.project(root / "hone.yaml", records, tuning, warmup)
    env = {**os.environ, "HONE_HOME": str(root / "home")}
    src = str(Path(__file__).resolve().parents[2] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    hone = [sys.executable, "-m", "hone"]
    with (root / "tune.log").open("w") as log:
        proc = subprocess.Popen(
            [*hone, "tune", str(project), "--no-why", "--apply", "never", *options], env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            returncode = proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            proc.terminate()
            returncode = proc.wait(timeout=600)
    print((root / "tune.log").read_text())
    shown = subprocess.run(
        [*hone, "show", "kafka-cluster", "--json"], env=env, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    study = json.loads(shown.stdout) if shown.returncode == 0 else {}
    return {"returncode": returncode, "study": study}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=40, help="search trials (at most 40)")
    parser.add_argument("--records", type=int, default=50_000, help="records per benchmark run")
    parser.add_argument("--baseline", type=int, default=3)
    parser.add_argument("--confirm", default="{candidates: 3, rounds: 3}")
    parser.add_argument("--noise", type=int, default=0, help="only measure the CV over N runs")
    parser.add_argument("--root", type=Path, help="where the bed and hone's state go")
    parser.add_argument("--limit", type=float, default=3600, help="seconds before SIGTERM")
    args = parser.parse_args(argv)
    root = args.root or Path(tempfile.mkdtemp(prefix="kafka-case-"))
    root.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with running_case(root) as case:
        print(f"bed and brokers up in {time.monotonic() - started:.0f} s ({root})", flush=True)
        if args.noise:
            case.benchmark_once(args.records)  # warm-up, left out
            rates = [case.benchmark_once(args.records) for _ in range(args.noise)]
            mean = statistics.mean(rates)
            print(f"ProducerPerformance, {args.records} records of 100 bytes, acks=all, 3 "
                  f"brokers: {mean:.0f} records/s, CV {100 * statistics.stdev(rates) / mean:.1f} "
                  f"% over {len(rates)} runs ({', '.join(f'{r:.0f}' for r in rates)})")  # fmt: skip
            return 0
        case.benchmark_once(args.records)  # the cluster's first load is slow (JIT): not a baseline
        result = tune(
            case, root, min(args.budget, 40), args.records, args.baseline, args.confirm,
            limit=args.limit,
        )  # fmt: skip
    (root / "result.json").write_text(json.dumps(result, indent=1))
    print(f"done in {time.monotonic() - started:.0f} s; hone exited {result['returncode']}; "
          f"study in {root / 'result.json'}")  # fmt: skip
    return result["returncode"]


if __name__ == "__main__":
    sys.exit(main())
