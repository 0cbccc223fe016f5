"""What real machines do to a collection: `hone collect -o` ended early (a full disk, SIGTERM,
kill -9) keeps every sample written before, whole, and `hone train` reads them; a device's
counters that restart or wrap are not read as negative traffic."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from hone.collect import LABELS, read_table

ROOT = Path(__file__).resolve().parents[2]


def _collect(home: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "hone", "collect", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "HONE_HOME": str(home)},
    )


def _whole(path: Path) -> int:
    """The rows of the file, each checked to have every column and its labels."""
    table = read_table(path)
    assert table.rows and all(len(row) == len(table.columns) for row in table.rows)
    assert set(table.labels) == {("compute", "xz")}
    return len(table.rows)


def _lines_so_far(path: Path) -> int:
    """The lines a .gz file being written holds now (each row goes out with a sync flush, so
    what is there decompresses without the trailer)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return 0
    return zlib.decompressobj(wbits=31).decompress(data).count(b"\n")


@pytest.mark.parametrize("name", ["run.csv", "run.csv.gz"])
def test_a_full_disk_stops_with_one_line_and_whole_rows(
    hone_home: Path, small_disk, name: str
) -> None:
    target = small_disk("8k") / name  # a few samples fill it
    run = _collect(hone_home, "-i", "0.02", "-n", "2000", "--extended", "-o", str(target),
                   "--type", "compute", "--app", "xz")  # fmt: skip
    _, stderr = run.communicate(timeout=120)
    assert run.returncode == 2, stderr
    assert "Traceback" not in stderr and len(stderr.splitlines()) == 1, stderr
    kept = int(stderr.split("keeps the ")[1].split()[0])
    assert stderr.startswith(f"hone: {target}: No space left on device") and kept > 0
    assert _whole(target) == kept


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_a_stopped_gzip_file_is_read_up_to_the_stop(hone_home: Path, tmp_path: Path, how) -> None:
    """`timeout 60 hone collect -o run.csv.gz` ends it with SIGTERM: the file is finished; a
    kill -9 leaves no gzip trailer, and the rows before the kill are still read."""
    target = tmp_path / "run.csv.gz"
    run = _collect(hone_home, "-i", "0.05", "-o", str(target), "--type", "compute", "--app", "xz")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and _lines_so_far(target) < 6:  # the header and 5 rows
        time.sleep(0.05)
    run.send_signal(how)
    run.communicate(timeout=30)
    assert run.returncode == -how if how == signal.SIGKILL else run.returncode == 143
    if how == signal.SIGTERM:
        assert gzip.decompress(target.read_bytes()).endswith(b",compute,xz\n")
    assert _whole(target) >= 3
    with gzip.open(target, "rt") as lines:
        assert tuple(lines.readline().strip().split(",")[-2:]) == LABELS


RECREATE = """
import json, socket, subprocess, time
from hone.collect import Collector

def run(command):
    subprocess.run(command, shell=True, check=True)

def pair():
    run("ip link add h0 type veth peer name h1 && ip addr add 10.77.0.1/24 dev h0"
        " && ip link set h0 up && ip link set h1 up"
        " && ip neigh replace 10.77.0.2 lladdr 02:00:00:00:00:02 dev h0")
    # the kernel turns a new link on a moment later (linkwatch): until then what it is given
    # is dropped, not sent (under load, all 100 datagrams once in 20 pairs)
    deadline = time.monotonic() + 10
    while "state UP" not in subprocess.run(["ip", "-o", "link", "show", "h0"],
                                           capture_output=True, text=True).stdout:
        assert time.monotonic() < deadline, "h0 is not up after 10 s"
        time.sleep(0.01)

def send(count):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as out:
        for _ in range(count):
            out.sendto(b"x" * 1000, ("10.77.0.2", 9))

run("ip link set lo up")
pair()
with Collector(processes=False, hardware=False, network="h0") as collector:
    send(5000)
    collector.prime()
    run("ip link del h0")
    pair()
    send(100)
    snapshot = collector.sample(0.2)
net = {k: v for k, v in snapshot.metrics.items() if k.startswith("NET.")}
print(json.dumps({"interval": snapshot.interval, "net": net}))
"""


def test_an_interface_made_again_counts_from_zero_not_below() -> None:
    """A container's veth removed and made again under its name between two readings: its
    counters start again at zero. Their fall read as negative traffic (-5000 packets)."""
    import json

    ran = subprocess.run(
        ["unshare", "--net", sys.executable, "-c", RECREATE],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    sample = json.loads(ran.stdout)
    net = sample["net"]
    assert min(net.values()) >= 0, {k: v for k, v in net.items() if v < 0}
    # the new h0 sent the 100 datagrams (and a few of its own: IPv6 neighbour discovery)
    assert 100 <= net["NET.STAT.txpcks[h0]"] * sample["interval"] < 150
    assert net["NET.STAT.txpcks"] == net["NET.STAT.txpcks[h0]"]


def test_diskstats_milliseconds_wrap_at_32_bits() -> None:
    """/proc/diskstats prints its times as 32-bit milliseconds: a queue of 32 passes 2^32 ms of
    queue time in a day and a half. No disk can be made to wrap in a test's seconds, so two
    readings across the wrap: 100 reads of 0.5 ms in one second, a queue of 0.05."""
    from hone.collect.collector import _disk

    top = 2**32
    before = (1000, 0, 8000, top - 30, 0, 0, 0, 0, 0, top - 400, top - 20)
    after = (1100, 0, 8800, 20, 0, 0, 0, 0, 1, 600, 30)
    figures = _disk(before, after, 1.0)
    assert figures["r_await"] == pytest.approx(0.5)
    assert figures["util"] == pytest.approx(100.0)
    assert figures["aqu-sz"] == pytest.approx(0.05)
