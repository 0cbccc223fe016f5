"""The collector against real activity: a CPU burner, direct disk writes, loopback traffic; the
CSV layout against A-Tune's own files; perf streaming with the software events this VM has."""

from __future__ import annotations

import gzip
import hashlib
import itertools
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hone.collect import ATUNE_METRICS, Collector, CsvWriter, read_table, sources
from hone.collect.perf import PerfCounters, derived, hardware_counters_available

DATASET = Path(__file__).resolve().parents[3] / "shared" / "atune-corpus" / "dataset"
BURN = "import time\nend = time.time() + 30\nwhile time.time() < end:\n    pass\n"


def test_columns_are_atune_columns() -> None:
    with gzip.open(next(DATASET.glob("*.csv.gz")), "rt") as handle:
        header = handle.readline().strip().split(",")
    assert tuple(header[:-2]) == ATUNE_METRICS
    assert len(ATUNE_METRICS) == 52


def test_cpu_burner_shows_in_cpu_and_process_metrics() -> None:
    burner = subprocess.Popen([sys.executable, "-c", BURN])
    try:
        with Collector(hardware=False) as collector:
            collector.sample(0.3)  # let the burner start
            snapshot = collector.sample(1.0)
    finally:
        burner.kill()
        burner.wait()
    m = snapshot.metrics
    shares = ("usr", "nice", "sys", "iowait", "irq", "soft", "steal", "guest", "idle")
    assert sum(m[f"CPU.STAT.{k}"] for k in shares) == pytest.approx(100, abs=0.5)
    # one core of two is busy: a good share of the machine, even when it is shared and loaded
    assert m["CPU.STAT.util"] > 30
    assert m["CPU.STAT.cutil"] > 50
    assert m["SYS.LDAVG.runq-sz"] >= 1 and m["SYS.LDAVG.plist-sz"] > 10  # the burner
    # the burner shows (idle reads about 0); on two shared cores it may get under a core
    mine = [p for p in snapshot.processes if p.pid == burner.pid]
    assert mine and mine[0].cpu > 30
    assert mine[0].busiest_threads and mine[0].busiest_threads[0].cpu > 30
    assert "PSI.CPU.some" in m and 0 <= m["PSI.CPU.some"] <= 100


def test_direct_writes_show_on_the_disk(tmp_path: Path) -> None:
    target = Path("/var/tmp") / f"hone-collect-{os.getpid()}"
    with Collector(hardware=False, processes=False) as collector:
        collector.prime()
        subprocess.run(
            ["dd", "if=/dev/zero", f"of={target}", "bs=1M", "count=64", "oflag=direct"],
            check=True,
            capture_output=True,
        )
        snapshot = collector.sample()
    target.unlink()
    m = snapshot.metrics
    disk = snapshot.disk
    assert m[f"STORAGE.STAT.wMBs[{disk}]"] == m["STORAGE.STAT.wMBs"]
    # 64 MB spread over the interval; other helpers' I/O only adds to it
    assert m["STORAGE.STAT.wMBs"] * snapshot.interval > 50
    assert m["STORAGE.STAT.ws"] > 0 and m["STORAGE.STAT.wareq-sz"] > 0
    assert m["MEM.VMSTAT.io.bo"] > 0


def test_loopback_traffic_counts_in_the_network_columns() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    received = []

    def drain() -> None:
        conn, _ = server.accept()
        with conn:
            while chunk := conn.recv(1 << 16):
                received.append(len(chunk))

    thread = threading.Thread(target=drain)
    thread.start()
    with (
        Collector(hardware=False, processes=False) as everything,
        Collector(hardware=False, processes=False, network="eth0") as nic,
    ):
        everything.prime()
        nic.prime()
        with socket.create_connection(("127.0.0.1", port)) as client:
            for _ in range(200):
                client.sendall(b"x" * 65536)
        thread.join()
        time.sleep(0.05)
        all_ifaces, eth0 = everything.sample(), nic.sample()
    server.close()
    assert sum(received) == 200 * 65536
    assert all_ifaces.metrics["NET.STAT.rxkBs"] * all_ifaces.interval > 12000  # 12.8 MB
    assert all_ifaces.metrics["NET.STAT.rxkBs[lo]"] * all_ifaces.interval > 12000
    assert eth0.metrics["NET.STAT.rxkBs"] * eth0.interval < 12000  # lo is not in eth0's columns


def test_csv_round_trip_in_atune_layout(tmp_path: Path) -> None:
    path = tmp_path / "run.csv.gz"
    with (
        Collector(hardware=False) as collector,
        CsvWriter(
            path, workload_type="throughput_performance", appname="idle", extended=True
        ) as writer,
    ):
        for snapshot in collector.stream(0.2, count=3):
            writer.write(snapshot)
    table = read_table(path, ATUNE_METRICS)
    assert len(table.rows) == 3
    assert table.labels == [("throughput_performance", "idle")] * 3
    assert table.rows[0][ATUNE_METRICS.index("PERF.STAT.IPC")] == -1  # unavailable here
    extended = read_table(path)
    assert "PSI.CPU.some" in extended.columns
    assert extended.columns.index("PSI.CPU.some") > len(ATUNE_METRICS) - 1


def test_stream_keeps_its_schedule() -> None:
    with Collector(hardware=False) as collector:
        started = time.monotonic()
        snapshots = list(collector.stream(0.25, duration=1.0))
    assert len(snapshots) == 4
    assert time.monotonic() - started == pytest.approx(1.0, abs=0.2)
    assert all(s.interval == pytest.approx(0.25, abs=0.1) for s in snapshots)


def test_a_duration_of_more_intervals_than_a_number_holds_is_forever() -> None:
    """`hone analyze -d 1e308 -i 1e-300` ended in an OverflowError traceback."""
    with Collector(hardware=False) as collector:
        first = list(itertools.islice(collector.stream(0.01, duration=1e308 / 1e-3), 3))
    assert len(first) == 3


def test_a_duration_ends_when_readings_are_slower_than_the_interval() -> None:
    """`hone collect -i 0.0001 -d 1` took 10,000 readings of about 3 ms each, 41 s, and `hone
    analyze -d 1 -i 1e-300` never ended: the duration became a count of readings. It is the
    time the stream takes, and still gives two snapshots at least."""
    with Collector(hardware=False) as collector:
        started = time.monotonic()
        taken = 0
        for _ in collector.stream(1e-5, duration=0.3):
            taken += 1
            if time.monotonic() - started > 5:  # the old stream would go on for minutes
                break
        elapsed = time.monotonic() - started
    assert elapsed < 1.0 and taken >= 2


def _poll(counters: PerfCounters, done, seconds: float = 10.0) -> dict[str, float]:
    """The counters' totals once `done` holds of them, or when `seconds` have passed."""
    deadline = time.monotonic() + seconds
    totals = counters.totals()
    while not done(totals) and time.monotonic() < deadline:
        time.sleep(0.1)
        totals = counters.totals()
    return totals


def test_perf_streams_counts_and_hardware_is_reported_honestly() -> None:
    counters = PerfCounters(["task-clock", "context-switches"], period_ms=100)
    try:
        # on a busy machine perf may start counting a while after it is spawned: the burner
        # runs once perf has reported, and its CPU time may take a few intervals to show
        before = _poll(counters, lambda totals: totals.get("task-clock", 0.0) > 0)
        burner = subprocess.run([sys.executable, "-c", "sum(range(10**7))"], check=True)
        assert burner.returncode == 0
        after = _poll(counters, lambda t: t["task-clock"] - before["task-clock"] > 100)
    finally:
        counters.close()
    assert after["task-clock"] - before["task-clock"] > 100  # msec of CPU time counted
    assert derived({"instructions": 2e9, "cycles": 1e9})["PERF.STAT.IPC"] == 2
    with Collector() as collector:
        snapshot = collector.sample(0.2)
    has_counters = hardware_counters_available()
    assert ("PERF.STAT.IPC" in snapshot.unavailable) is not has_counters
    assert "MEM.BANDWIDTH.Total_Util" in snapshot.unavailable


def test_cli_writes_a_labelled_csv_and_refuses_bad_options(hone_cli, tmp_path: Path) -> None:
    out = tmp_path / "idle.csv"
    result = hone_cli("collect", "-i", "0.2", "-n", "2", "-o", str(out), "--app", "idle")
    assert result.returncode == 0, result.stderr
    lines = out.read_text().splitlines()
    assert len(lines) == 3 and lines[0].endswith("workload.type,workload.appname")
    assert lines[1].endswith(",default,idle")
    bad = hone_cli("collect", "-i", "0.2", "-n", "2", "-d", "3")
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0


def test_run_queue_leaves_out_the_reader_as_vmstat_does() -> None:
    """/proc/stat's procs_running counts the process reading it; vmstat's `r` (A-Tune's
    MEM.VMSTAT.procs.r) does not. Counted, an idle machine had a task queued on every reading
    and one busy thread on two CPUs made `hone analyze` name the CPU the bottleneck."""
    import dataclasses

    from hone.analyze.use import resources

    assert sources.read_stat().running >= 1  # the reader: always running as it reads
    with Collector(hardware=False, processes=False) as collector:
        first, second = collector._read(), collector._read()
        for running, queued in ((1, 0), (2, 1), (5, 4)):
            stat = dataclasses.replace(second.stat, running=running)
            after = dataclasses.replace(second, at=first.at + 1, stat=stat, own_running=1)
            snapshot = collector._snapshot(first, after)
            assert snapshot.metrics["MEM.VMSTAT.procs.r"] == queued
            if running == 2:  # the reader and one busy thread: one runnable task, no queue
                cpu = resources([snapshot], {}, {})[0]
                per_core = 1 / snapshot.metrics["CPU.STAT.cores"]
                assert f"run queue {per_core:.1f}/core" in cpu.saturation_text


def _hash_until(stop: threading.Event) -> None:
    """Busy work in this process that lets go of the GIL while it hashes: a thread of the
    collector's own process that is runnable while the collector reads."""
    data = b"x" * 20_000_000
    while not stop.is_set():
        hashlib.sha256(data).digest()


def test_hones_own_threads_are_not_the_machines_run_queue_or_busiest() -> None:
    """/proc/loadavg's runnable count holds the reader and every other thread of hone's on a
    CPU: an idle machine read `runq 1` on every line of `hone collect`, and hone was among its
    busiest processes. sar's runq-sz leaves out its reader; hone leaves out all of its own
    threads that were runnable as it read, and its own process from the table."""
    import dataclasses

    stop = threading.Event()
    workers = [threading.Thread(target=_hash_until, args=(stop,)) for _ in range(2)]
    for worker in workers:
        worker.start()
    try:
        # the kernel's states: the reader and the two hashing threads, runnable
        counts = [sources.own_running() for _ in range(20)]
        with Collector(hardware=False, top=50) as collector:
            collector.sample(0.2)
            snapshot = collector.sample(1.0)
            first, second = collector._read(), collector._read()
    finally:
        stop.set()
        for worker in workers:
            worker.join()
    assert min(counts) >= 1 and max(counts) >= 3, counts
    assert os.getpid() not in {p.pid for p in snapshot.processes}  # busy, yet hone's own
    assert snapshot.processes  # the machine's other processes are there
    # at the moment of reading, whatever of the runnable count was hone's is left out
    for runnable, own, queued in ((3, 3, 0), (5, 3, 2), (1, 1, 0), (2, 3, 0)):
        load = dataclasses.replace(second.load, runnable=runnable)
        stat = dataclasses.replace(second.stat, running=runnable)
        after = dataclasses.replace(second, at=first.at + 1, load=load, stat=stat,
                                    own_running=own)  # fmt: skip
        m = collector._snapshot(first, after).metrics
        assert m["SYS.LDAVG.runq-sz"] == queued and m["MEM.VMSTAT.procs.r"] == queued


def test_a_fully_busy_interval_is_100_per_cent_exactly() -> None:
    """Six shares each rounded, then summed, read 100.00000000000001 for a CPU busy throughout
    (1 user, 3 system, 5 irq and 2 softirq ticks): a utilisation above 100 broke the range checks
    of whoever read the samples back."""
    from hone.collect.collector import _cpu_shares

    ticks = dict.fromkeys(sources.CPU_FIELDS, 0) | {"user": 1, "system": 3, "irq": 5, "softirq": 2}
    after = tuple(ticks[name] for name in sources.CPU_FIELDS)
    assert _cpu_shares((0,) * len(after), after)["util"] == 100.0
