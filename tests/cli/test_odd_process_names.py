"""A process may name itself with any bytes (prctl PR_SET_NAME), and /proc/PID/stat and comm
carry them as given. hone read them as strict UTF-8: while one such process ran anywhere on
the machine, every `hone diagnose` ended in a UnicodeDecodeError traceback."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

#: names itself with bytes that are not UTF-8, then works half of each 10 ms
ODD = """
import ctypes, time
ctypes.CDLL(None).prctl(15, ctypes.c_char_p(b"\\xff\\xfeodd\\xc3"), 0, 0, 0)
end = time.monotonic() + 120
while time.monotonic() < end:
    busy = time.perf_counter() + 0.005
    while time.perf_counter() < busy:
        pass
    time.sleep(0.005)
"""


@pytest.fixture
def odd_process() -> Iterator[subprocess.Popen]:
    """A process named `\\xff\\xfeodd\\xc3` (read back from /proc before the test goes on)."""
    program = subprocess.Popen([sys.executable, "-c", ODD])
    comm = Path(f"/proc/{program.pid}/comm")
    deadline = time.monotonic() + 10
    while comm.read_bytes() != b"\xff\xfeodd\xc3\n" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert comm.read_bytes() == b"\xff\xfeodd\xc3\n"
    yield program
    program.kill()
    program.wait()


def test_diagnose_a_command_beside_a_process_with_an_odd_name(
    odd_process: subprocess.Popen, hone_cli, tmp_path: Path
) -> None:
    work = [sys.executable, "-c", "sum(range(10**7))"]
    done = hone_cli("diagnose", "-o", str(tmp_path / "rep"), "--", *work)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert (tmp_path / "rep" / "report.html").is_file()


def test_diagnose_the_process_with_the_odd_name(
    odd_process: subprocess.Popen, hone_cli, tmp_path: Path
) -> None:
    folder = tmp_path / "rep"
    done = hone_cli("diagnose", "--pid", str(odd_process.pid), "-d", "2", "-o", str(folder))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout.startswith(f"hone diagnose: pid {odd_process.pid} (")
