"""Real workloads on 127.0.0.1, started fresh for a while and stopped again: what `hone analyze`
is trained on (collect.py) and tested against (tests/analyze).

    with running("web"):          # nginx in a private prefix under load from wrk
        ...                       # collect or analyze here

Each workload has the hone class it belongs to and an application name (the CSV labels). Servers
run on free ports with their own data folders under a temporary directory; load generators run
for longer than anyone samples and are killed on exit."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LONG = 3600  # seconds a load generator is told to run; it is killed long before


@dataclass(frozen=True)
class Workload:
    name: str  # application label (workload.appname)
    cls: str  # hone class (workload.type)
    start: Callable[[Path, list[subprocess.Popen]], None]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _spawn(procs: list[subprocess.Popen], argv: list[str], **kw: object) -> subprocess.Popen:
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        **kw,  # type: ignore[arg-type]
    )
    procs.append(proc)
    return proc


def _wait_for(check: list[str], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if subprocess.run(check, capture_output=True).returncode == 0:
            return
        time.sleep(0.1)
    raise RuntimeError(f"not ready after {timeout:.0f} s: {' '.join(check)}")


def _wait_for_port(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return
        time.sleep(0.2)
    raise RuntimeError(f"nothing listens on port {port} after {timeout:.0f} s")


def _loop(argv: list[str]) -> list[str]:
    """Run a finite benchmark command again and again (argv passed as positional parameters)."""
    return ["sh", "-c", 'while :; do "$@" >/dev/null 2>&1; done', "loop", *argv]


def _idle(tmp: Path, procs: list[subprocess.Popen]) -> None:
    return None


def _sysbench_cpu(tmp: Path, procs: list[subprocess.Popen]) -> None:
    _spawn(procs, ["sysbench", "cpu", "--threads=2", f"--time={LONG}", "run"])


def _sysbench_memory(tmp: Path, procs: list[subprocess.Popen]) -> None:
    _spawn(procs, ["sysbench", "memory", "--threads=2", "--memory-block-size=1M",
                   "--memory-total-size=100000T", f"--time={LONG}", "run"])  # fmt: skip


def _fio(tmp: Path, procs: list[subprocess.Popen]) -> None:
    # /var/tmp is on the disk here (direct I/O needs a real file system, not tmpfs)
    folder = Path(tempfile.mkdtemp(prefix="hone-fio-", dir="/var/tmp"))
    (tmp / "fio-dir").write_text(str(folder))
    _spawn(procs, ["fio", "--name=hone", f"--directory={folder}", "--size=256M", "--rw=randrw",
                   "--bs=4k", "--direct=1", "--ioengine=libaio", "--iodepth=16", "--numjobs=1",
                   "--thread", "--time_based", f"--runtime={LONG}"])  # fmt: skip


def _compile(tmp: Path, procs: list[subprocess.Popen]) -> None:
    """gcc -O2 on generated C units in a make -j2 loop: many short processes, compute-bound."""
    src = tmp / "build"
    src.mkdir()
    units = []
    for i in range(16):
        body = "\n".join(
            f"double f{i}_{j}(double x) {{ double s = 0; for (int k = 0; k < {j + 50}; k++)"
            f" s += x * k / (k + {j + 1}); return s; }}"
            for j in range(120)
        )
        (src / f"u{i}.c").write_text(body + "\n")
        units.append(f"u{i}.o")
    (src / "Makefile").write_text(
        f"all: {' '.join(units)}\n%.o: %.c\n\tgcc -O2 -c $< -o $@\nclean:\n\trm -f *.o\n"
    )
    _spawn(procs, ["sh", "-c", "while :; do make -s -j2 >/dev/null 2>&1; make -s clean; done"],
           cwd=src)  # fmt: skip


def _nginx(tmp: Path, procs: list[subprocess.Popen]) -> None:
    port = free_port()
    env = {**os.environ, "HONE_WORKDIR": str(tmp), "HONE_PORT": str(port)}
    example = ROOT / "examples" / "nginx"
    subprocess.run(["sh", str(example / "setup.sh")], env=env, check=True)
    subprocess.run(["sh", str(example / "start.sh")], env=env, check=True)
    (tmp / "nginx-stop").write_text(str(example / "stop.sh"))
    url = f"http://127.0.0.1:{port}/4k.html"
    _wait_for(["curl", "-sf", "-o", "/dev/null", url])
    _spawn(procs, ["wrk", "-t2", "-c64", f"-d{LONG}s", url])


def _redis(tmp: Path, procs: list[subprocess.Popen]) -> None:
    port = str(free_port())
    _spawn(procs, ["redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "",
                   "--appendonly", "no", "--dir", str(tmp), "--daemonize", "no"])  # fmt: skip
    _wait_for(["redis-cli", "-p", port, "ping"])
    _spawn(procs, _loop(["redis-benchmark", "-p", port, "-t", "set,get,incr,lpush,lpop",
                         "-n", "2000000", "-c", "50", "-q"]))  # fmt: skip


def _memcached(tmp: Path, procs: list[subprocess.Popen]) -> None:
    port = str(free_port())
    _spawn(procs, ["memcached", "-l", "127.0.0.1", "-p", port, "-U", "0", "-u", "root",
                   "-t", "2", "-m", "64", "-c", "1024"])  # fmt: skip
    _wait_for(["memcstat", f"--servers=127.0.0.1:{port}"])
    _spawn(procs, _loop(["timeout", "120", "memcaslap", "-s", f"127.0.0.1:{port}", "-T", "2",
                         "-c", "32", "-t", "100s"]))  # fmt: skip


PG_BIN = Path("/usr/lib/postgresql/15/bin")


def _postgresql(tmp: Path, procs: list[subprocess.Popen]) -> None:
    """A fresh cluster owned by postgres (it refuses root), pgbench scale 5, 8 clients."""
    data, sock = tmp / "pg", tmp / "pgsock"
    sock.mkdir()
    shutil.chown(tmp, "postgres")
    shutil.chown(sock, "postgres")
    port = str(free_port())
    as_pg = ["runuser", "-u", "postgres", "--"]
    subprocess.run([*as_pg, str(PG_BIN / "initdb"), "-D", str(data), "-A", "trust",
                    "-U", "postgres"], check=True, capture_output=True)  # fmt: skip
    _spawn(procs, [*as_pg, str(PG_BIN / "postgres"), "-D", str(data), "-p", port,
                   "-k", str(sock), "-c", "listen_addresses=127.0.0.1"])  # fmt: skip
    _wait_for([str(PG_BIN / "pg_isready"), "-q", "-h", str(sock), "-p", port])
    subprocess.run([*as_pg, "pgbench", "-h", str(sock), "-p", port, "-i", "-s", "5", "-q",
                    "postgres"], check=True, capture_output=True)  # fmt: skip
    _spawn(procs, [*as_pg, "pgbench", "-h", str(sock), "-p", port, "-c", "8", "-j", "2",
                   "-T", str(LONG), "postgres"])  # fmt: skip


KAFKA = "3.9.1"
KAFKA_POM = f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>hone</groupId><artifactId>kafka-libs</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId>
      <version>{KAFKA}</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId>
      <version>{KAFKA}</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId>
      <version>1.7.36</version></dependency>
  </dependencies>
</project>
"""


def kafka_libs() -> Path:
    """Kafka's jars from Maven Central, fetched once into ~/.cache/hone (56 MB, seconds)."""
    libs = Path.home() / ".cache" / "hone" / f"kafka-{KAFKA}"
    if not (libs / ".complete").exists():
        with tempfile.TemporaryDirectory() as build:
            (Path(build) / "pom.xml").write_text(KAFKA_POM)
            subprocess.run(["mvn", "-q", "-B", "dependency:copy-dependencies",
                            f"-DoutputDirectory={libs}"], cwd=build, check=True)  # fmt: skip
        (libs / ".complete").touch()
    return libs


def _kafka(tmp: Path, procs: list[subprocess.Popen]) -> None:
    """A single-node KRaft broker and ProducerPerformance (100-byte records, acks=1) in a loop;
    retention keeps the log small."""
    classpath = f"{kafka_libs()}/*"
    port, controller = free_port(), free_port()
    config = tmp / "server.properties"
    config.write_text(
        "process.roles=broker,controller\nnode.id=1\n"
        f"controller.quorum.voters=1@127.0.0.1:{controller}\n"
        f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}\n"
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}\n"
        "controller.listener.names=CONTROLLER\n"
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\n"
        f"log.dirs={tmp / 'data'}\nnum.partitions=1\noffsets.topic.replication.factor=1\n"
        "transaction.state.log.replication.factor=1\ntransaction.state.log.min.isr=1\n"
        "log.retention.bytes=268435456\nlog.segment.bytes=67108864\n"
    )
    java = ["java", "-Xmx512m", "-cp", classpath]
    uuid = subprocess.run([*java, "kafka.tools.StorageTool", "random-uuid"], check=True,
                          capture_output=True, text=True).stdout.split()[-1]  # fmt: skip
    subprocess.run([*java, "kafka.tools.StorageTool", "format", "-t", uuid, "-c", str(config)],
                   check=True, capture_output=True)  # fmt: skip
    _spawn(procs, [*java, "kafka.Kafka", str(config)])
    _wait_for_port(port, timeout=60)
    producer = ["java", "-Xmx256m", "-cp", classpath, "org.apache.kafka.tools.ProducerPerformance",
                "--topic", "hone", "--num-records", "2000000", "--record-size", "100",
                "--throughput", "-1", "--producer-props", f"bootstrap.servers=127.0.0.1:{port}",
                "acks=1"]  # fmt: skip
    _spawn(procs, _loop(producer))


WORKLOADS = {
    w.name: w
    for w in (
        Workload("idle", "idle", _idle),
        Workload("sysbench-cpu", "compute", _sysbench_cpu),
        Workload("gcc", "compute", _compile),
        # memory-bandwidth work looks like compute to every OS counter (100 % user time, no I/O);
        # only hardware counters tell them apart, and this machine has none
        Workload("sysbench-memory", "compute", _sysbench_memory),
        Workload("fio", "storage", _fio),
        Workload("nginx", "web", _nginx),
        Workload("redis", "in-memory-database", _redis),
        Workload("memcached", "in-memory-database", _memcached),
        Workload("postgresql", "database", _postgresql),
        Workload("kafka", "messaging", _kafka),
    )
}


def _stop(procs: list[subprocess.Popen]) -> None:
    """Kill each process group this module started, load generators first (reverse order)."""
    for proc in reversed(procs):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)


@contextlib.contextmanager
def running(name: str, warmup: float = 3.0) -> Iterator[Workload]:
    """Start workload `name`, let it settle for `warmup` seconds, stop everything on exit."""
    workload = WORKLOADS[name]
    procs: list[subprocess.Popen] = []
    with tempfile.TemporaryDirectory(prefix=f"hone-{name}-") as folder:
        tmp = Path(folder)
        tmp.chmod(0o755)  # nginx workers and postgres do not run as root
        try:
            workload.start(tmp, procs)
            time.sleep(warmup)
            yield workload
        finally:
            _stop(procs)
            stop_script = tmp / "nginx-stop"
            if stop_script.exists():
                env = {**os.environ, "HONE_WORKDIR": str(tmp)}
                subprocess.run(["sh", stop_script.read_text()], env=env, check=False)
            fio_dir = tmp / "fio-dir"
            if fio_dir.exists():
                shutil.rmtree(fio_dir.read_text(), ignore_errors=True)
