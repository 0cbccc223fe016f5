"""`hone collect -o`: a file that ends early (a full disk, SIGTERM, kill -9) still holds every
sample written before, whole, and `hone train` reads them."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hone.collect import LABELS, read_table

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real file system of 8 kB, which a few samples fill."""
    folder = tmp_path / "small"
    folder.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", str(folder)], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


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


@pytest.mark.parametrize("name", ["run.csv", "run.csv.gz"])
def test_a_full_disk_stops_with_one_line_and_whole_rows(
    hone_home: Path, small_disk: Path, name: str
) -> None:
    target = small_disk / name
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
    run = _collect(hone_home, "-i", "0.1", "-o", str(target), "--type", "compute", "--app", "xz")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not target.exists() or target.stat().st_size < 2000):
        time.sleep(0.1)
    run.send_signal(how)
    run.communicate(timeout=30)
    assert run.returncode == -how if how == signal.SIGKILL else run.returncode == 143
    if how == signal.SIGTERM:
        assert gzip.decompress(target.read_bytes()).endswith(b",compute,xz\n")
    assert _whole(target) >= 3
    with gzip.open(target, "rt") as lines:
        assert tuple(lines.readline().strip().split(",")[-2:]) == LABELS
