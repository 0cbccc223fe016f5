"""A MySQL/MariaDB option file knob finds its option where the server reads it: in a file pulled in
by `!include` or `!includedir`, on a `loose-` line, in either spelling; hone edits it there, a real
mariadbd started on the files reads the new value, and restore gives every file back byte for
byte. A relative include, which the server takes from its working directory, is refused."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from hone.errors import ActuationError
from hone.journal import Journal
from hone.knobs.config_file import ConfigFileActuator
from tests.knobs.test_config_file_dialects import refusal

POOL = "innodb_buffer_pool_size"


def option_files(root: Path) -> tuple[Path, Path]:
    """my.cnf, which includes extra/tuning.cnf (CRLF, a `loose-` line with a comment) and conf.d/
    (one file of another group, one `.cnf.bak` the server skips); returns my.cnf and tuning.cnf."""
    (root / "extra").mkdir(parents=True)
    (root / "conf.d").mkdir()
    tuning = root / "extra" / "tuning.cnf"
    tuning.write_bytes(
        b"[mysqld]\r\n# sized for the test\r\nloose-innodb-buffer-pool-size = 48M  # was 32M\r\n"
    )
    (root / "conf.d" / "10-client.cnf").write_bytes(b"[client]\nuser = nobody\n")
    (root / "conf.d" / "20-old.cnf.bak").write_bytes(b"[mysqld]\ninnodb_buffer_pool_size = 1G\n")
    main = root / "my.cnf"
    main.write_bytes(
        f"[mysqld]\nmax_connections = 50\n!include {tuning}\n!includedir {root / 'conf.d'}\n"
        "\n[mysqldump]\nquick\n".encode()
    )
    return main, tuning


def every_file(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def server_reads(defaults: Path, work: Path) -> int:
    """@@innodb_buffer_pool_size of a real mariadbd started on `defaults`, on a socket only."""
    data, sock = work / "data", work / "s.sock"
    data.mkdir()
    server = subprocess.Popen(
        ["mariadbd", f"--defaults-file={defaults}", "--user=root", f"--datadir={data}",
         f"--socket={sock}", "--skip-networking", "--skip-grant-tables",
         f"--pid-file={work / 'pid'}", f"--log-error={work / 'err.log'}",
         "--innodb-log-file-size=4M"],
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and server.poll() is None:
            ask = subprocess.run(
                ["mariadb", "--no-defaults", f"--socket={sock}", "-uroot", "-N", "-B", "-e",
                 "SELECT @@innodb_buffer_pool_size"],
                capture_output=True, text=True,
            )  # fmt: skip
            if ask.returncode == 0:
                return int(ask.stdout)
            time.sleep(0.05)
        raise AssertionError((work / "err.log").read_text())
    finally:
        server.terminate()
        server.wait(30)


def test_an_option_in_an_included_file_on_a_loose_line_is_edited_there(tmp_path: Path) -> None:
    root = tmp_path / "etc"
    main, tuning = option_files(root)
    before = every_file(root)
    knob = ConfigFileActuator(file=str(main), key=POOL, format="ini", section="mysqld")
    journal = Journal.for_project("mysql-includes")
    assert journal.remember(POOL, knob) == "48M"
    knob.apply("64M")
    after = every_file(root)
    assert after[str(tuning)] == before[str(tuning)].replace(b"= 48M ", b"= 64M ")
    assert {k: v for k, v in after.items() if k != str(tuning)} == {
        k: v for k, v in before.items() if k != str(tuning)
    }
    assert server_reads(main, tmp_path) == 64 << 20
    assert all(o.ok for o in journal.restore())
    assert every_file(root) == before


@pytest.mark.parametrize("spelling", ["loose_innodb-buffer_pool-size", "LOOSE-" + POOL])
def test_a_loose_line_is_the_option_itself_so_a_second_one_is_refused(
    tmp_path: Path, spelling: str
) -> None:
    """mariadbd reads both lines as one option (the last wins): an edit of the first alone would
    do nothing, so the knob is refused, naming both places, and nothing changes."""
    root = tmp_path / "etc"
    main, tuning = option_files(root)
    extra = root / "conf.d" / "30-pool.cnf"
    extra.write_bytes(f"[mysqld]\n{spelling} = 96M\n".encode())
    before = every_file(root)
    knob = ConfigFileActuator(file=str(main), key=POOL, format="ini", section="mysqld")
    assert refusal(knob.apply, "64M") == (
        f"{POOL}: set in {tuning} line 3 and again in {extra} line 2 as {spelling} (included "
        f"from {main} line 4): the program reads one of them, so an edit of the other could do "
        "nothing; keep one"
    )
    assert every_file(root) == before


def test_a_relative_include_is_refused_as_the_server_reads_it_from_its_working_directory(
    tmp_path: Path,
) -> None:
    """my_print_defaults (the server's own option reader) finds `!include extra/tuning.cnf` from
    the folder it runs in, not from the including file's: hone cannot know the server's."""
    root = tmp_path / "etc"
    main, tuning = option_files(root)
    text = main.read_bytes().replace(str(tuning).encode(), b"extra/tuning.cnf")
    main.write_bytes(text)

    def read_from(cwd: Path) -> str:
        command = ["my_print_defaults", f"--defaults-file={main}", "mysqld"]
        return subprocess.run(command, cwd=cwd, capture_output=True, text=True).stdout

    assert "--loose-innodb-buffer-pool-size=48M" in read_from(root)
    assert "innodb" not in read_from(tmp_path)
    knob = ConfigFileActuator(file=str(main), key=POOL, format="ini", section="mysqld")
    with pytest.raises(ActuationError) as info:
        knob.get()
    assert str(info.value) == (
        f"{POOL}: {main} line 3: !include extra/tuning.cnf is a relative path, which MySQL and "
        "MariaDB take from the server's working directory, not from this file's folder: hone "
        "cannot tell which file the server reads; give the full path"
    )
    assert main.read_bytes() == text
