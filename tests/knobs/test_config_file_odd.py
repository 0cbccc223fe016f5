"""Config-file knobs on the files real machines have: a key set twice (the program reads one
hone would not edit), CRLF line endings, no final newline, bytes that are not UTF-8, a key
commented out or in the other `key value` / `key = value` form, includes, a symlink loop, an
immutable file. Each works byte-exact or is refused in one line before the file changes."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from forked_hone import run_hone

from hone.errors import ActuationError
from hone.journal import Journal
from hone.knobs.config_file import ConfigFileActuator

REDIS_TWICE = b"port 6379\nmaxmemory 100mb\nappendonly no\nmaxmemory 200mb\n"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def redis_twice(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """A real redis-server started from a redis.conf that sets maxmemory twice."""
    port = _free_port()
    conf = tmp_path / "redis.conf"
    conf.write_bytes(REDIS_TWICE.replace(b"6379", str(port).encode()) + b'save ""\n')
    server = subprocess.Popen(
        ["redis-server", str(conf), "--dir", str(tmp_path)], stdout=subprocess.DEVNULL
    )
    try:
        for _ in range(100):
            ping = subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True)
            if ping.stdout.strip() == b"PONG":
                break
            time.sleep(0.05)
        yield conf, port
    finally:
        server.terminate()
        server.wait(10)


def test_redis_reads_the_last_of_a_key_set_twice_and_hone_refuses_the_file(
    redis_twice: tuple[Path, int],
) -> None:
    conf, port = redis_twice
    read = subprocess.run(
        ["redis-cli", "-p", str(port), "config", "get", "maxmemory"], capture_output=True
    )
    assert read.stdout.split()[-1] == str(200 * 1024 * 1024).encode()  # the last line counts
    before = conf.read_bytes()
    knob = ConfigFileActuator(file=str(conf), key="maxmemory", format="space")
    for attempt in (knob.get, lambda: knob.apply("300mb")):
        with pytest.raises(ActuationError) as info:
            attempt()
        message = str(info.value)
        assert "\n" not in message
        assert str(conf) in message and "lines 2 and 4" in message and "maxmemory" in message
    assert conf.read_bytes() == before


def _where(folder: Path) -> str:
    """How an error of `_tune`'s knob begins: the project file, the line of its `config` and
    the knob, as every bad input is named."""
    lines = (folder / "hone.yaml").read_text().splitlines()
    line = lines.index("    config:") + 1
    return f"hone: {folder / 'hone.yaml'}:{line}: config: knob 'maxmemory': "


def _tune(folder: Path) -> subprocess.CompletedProcess[str]:
    """`hone tune` of a project whose one knob is redis.conf's maxmemory in `folder`."""
    project = {
        "name": folder.name,
        "knobs": {
            "maxmemory": {
                "type": "categorical",
                "values": ["100mb", "300mb"],
                "config": {"file": "redis.conf", "format": "space", "key": "maxmemory"},
                "restart": False,
            }
        },
        "benchmark": {"command": "echo 'x 1'"},
        "metrics": {"x": {"pattern": r"x (\S+)", "direction": "maximize"}},
        "tuning": {"budget": 2, "baseline": 1},
    }
    (folder / "hone.yaml").write_text(yaml.safe_dump(project))
    env = {**os.environ, "HONE_HOME": str(folder / "home")}
    return run_hone("tune", str(folder), "--no-why", env=env, cwd=Path.cwd())


def test_a_key_set_twice_stops_tune_before_anything_changes(tmp_path: Path) -> None:
    conf = tmp_path / "redis.conf"
    conf.write_bytes(REDIS_TWICE)
    done = _tune(tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "lines 2 and 4" in lines[0] and "maxmemory" in lines[0], lines
    assert conf.read_bytes() == REDIS_TWICE
    assert "baseline" not in done.stdout


def test_an_immutable_file_stops_tune_before_the_baseline(tmp_path: Path) -> None:
    """Found at the first trial it ended the run with `could not put the knobs back`."""
    conf = tmp_path / "redis.conf"
    conf.write_bytes(b"maxmemory 100mb\n")
    subprocess.run(["chattr", "+i", str(conf)], check=True)
    try:
        done = _tune(tmp_path)
    finally:
        subprocess.run(["chattr", "-i", str(conf)], check=True)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"{_where(tmp_path)}cannot write {conf}: read-only "
        "(a read-only mount, or immutable: lsattr)"
    ]
    assert "baseline" not in done.stdout


def test_a_hard_linked_file_stops_tune_before_the_baseline(tmp_path: Path) -> None:
    """The rename split the links: the other name (the one the program may read) kept the old
    text through every trial, and after restore the two names were two files."""
    conf = tmp_path / "redis.conf"
    conf.write_bytes(b"maxmemory 100mb\n")
    other = tmp_path / "redis-main.conf"
    os.link(conf, other)
    done = _tune(tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"{_where(tmp_path)}{conf} has 2 hard links: hone replaces a file by rename, which would "
        "leave the other names with the old text (the program may read one of them) and never "
        "join them again; make it one file, or a symlink"
    ]
    assert "baseline" not in done.stdout
    assert os.path.samefile(conf, other) and conf.read_bytes() == b"maxmemory 100mb\n"


def test_a_folder_named_as_the_file_is_said_to_be_one(tmp_path: Path) -> None:
    """A folder's link count (2 and one per subfolder) was taken for other names of a file:
    `redis.conf has 3 hard links: hone replaces a file by rename, ...`."""
    (tmp_path / "redis.conf" / "sub").mkdir(parents=True)
    done = _tune(tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"{_where(tmp_path)}{tmp_path / 'redis.conf'} is a folder, not a file"
    ]
    assert "baseline" not in done.stdout


@pytest.mark.parametrize(
    ("fmt", "text", "section", "words"),
    [
        ("equals", b"shared_buffers = 128MB\nSHARED_BUFFERS = 1GB\n", None, "lines 1 and 2"),
        (
            "equals",
            b"a = 1\r\n#x\r\nshared_buffers=1\r\nshared_buffers=2\r\n",
            None,
            "lines 3 and 4",
        ),
        ("ini", b"[a]\nshared_buffers = 1\n[b]\nx = 1\n[a]\ny = 2\n", "a", "lines 1 and 5"),
        ("regex", b"shared_buffers = 1\nshared_buffers = 2\n", None, "lines 1 and 2"),
    ],
)
def test_a_key_or_section_twice_is_refused_in_every_format(
    tmp_path: Path, fmt: str, text: bytes, section: str | None, words: str
) -> None:
    path = tmp_path / "app.conf"
    path.write_bytes(text)
    options = {"pattern": r"^shared_buffers = (\S+)"} if fmt == "regex" else {}
    knob = ConfigFileActuator(
        file=str(path), key="shared_buffers", format=fmt, section=section, **options
    )
    with pytest.raises(ActuationError, match=words):
        knob.get()
    with pytest.raises(ActuationError, match=words):
        knob.set("2GB")
    assert path.read_bytes() == text


def test_the_same_key_in_two_sections_is_two_keys(tmp_path: Path) -> None:
    path = tmp_path / "my.cnf"
    path.write_bytes(b"[client]\nport = 1\n[mysqld]\nport = 2\n")
    knob = ConfigFileActuator(file=str(path), key="port", format="ini", section="mysqld")
    assert knob.get() == "2"
    whole = ConfigFileActuator(file=str(path), key="port", format="ini")
    with pytest.raises(ActuationError, match="lines 2 and 4"):
        whole.get()


@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        ("equals", b"# c\r\nworkers = 4 # per core\r\nmode = 'fast'\r\n"),
        ("equals", b"mode = fast\nworkers=4"),
        ("space", b"port 6379\r\nworkers 4;\r\n"),
        ("space", b"# caf\xe9 \xff\nworkers 4\nname caf\xe9\n"),
        ("ini", b"[a]\r\nworkers = 1\r\n[b]\r\nworkers = 4\r\n"),
    ],
)
def test_odd_files_come_back_byte_exact(tmp_path: Path, fmt: str, text: bytes) -> None:
    """CRLF endings, no final newline, Latin-1 bytes: every byte but the value is kept."""
    path = tmp_path / "app.conf"
    path.write_bytes(text)
    knob = ConfigFileActuator(file=str(path), key="workers", format=fmt, section="b")
    journal = Journal.for_project("odd")
    assert journal.remember("workers", knob) == "4"
    knob.apply("12")
    assert path.read_bytes() == text.replace(b"4", b"12")
    assert all(o.ok for o in journal.restore())
    assert path.read_bytes() == text


@pytest.mark.parametrize(
    ("fmt", "text", "words"),
    [
        ("space", b"port 1\n# maxmemory 100mb\n", "line 2 has it commented out"),
        ("equals", b"#maxmemory = 1\n", "line 1 has it commented out"),
        ("equals", b"maxmemory 100mb\n", "line 1 sets it in another format"),
        ("space", b"maxmemory = 100mb\n", "format equals, not space"),
        ("space", b"MaxMemory 100mb\n", "spells it 'MaxMemory'"),
        ("space", b"maxmemory-policy noeviction\n", "key not found in"),
    ],
)
def test_a_key_hone_cannot_edit_exactly_is_named(
    tmp_path: Path, fmt: str, text: bytes, words: str
) -> None:
    path = tmp_path / "redis.conf"
    path.write_bytes(text)
    knob = ConfigFileActuator(file=str(path), key="maxmemory", format=fmt)
    with pytest.raises(ActuationError, match=words):
        Journal.for_project("unread").remember("maxmemory", knob)
    assert path.read_bytes() == text


@pytest.mark.parametrize(
    ("main", "included", "inner"),
    [
        (b"maxmemory 1mb\ninclude {inc}\n", "local.conf", b"maxmemory 2mb\n"),  # redis
        (b"maxmemory = 1\ninclude_dir 'conf.d'\n", "conf.d/tune.conf", b"maxmemory = 2\n"),  # pg
        (b"[s]\nmaxmemory = 1\n!includedir {dir}\n", "my.cnf.d/x.cnf", b"[s]\nmaxmemory = 2\n"),
        (b"maxmemory 1mb;\ninclude extra/*.conf;\n", "extra/a.conf", b"maxmemory 2mb;\n"),  # nginx
    ],
)
def test_a_key_set_again_in_an_included_file_is_refused(
    tmp_path: Path, main: bytes, included: str, inner: bytes
) -> None:
    target = tmp_path / included
    target.parent.mkdir(exist_ok=True)
    target.write_bytes(inner)
    text = main.replace(b"{inc}", str(target).encode()).replace(
        b"{dir}", str(target.parent).encode()
    )
    path = tmp_path / "app.conf"
    path.write_bytes(text)
    fmt = "ini" if b"[s]" in main else "equals" if b"= 1" in main else "space"
    knob = ConfigFileActuator(file=str(path), key="maxmemory", format=fmt, section="s")
    with pytest.raises(ActuationError, match=f"again in {target} line"):
        knob.get()
    with pytest.raises(ActuationError, match="included from"):
        knob.set("5")
    assert path.read_bytes() == text
    target.write_bytes(b"# nothing of ours\n")
    assert knob.get() in ("1", "1mb")


def test_a_key_also_set_by_alter_system_is_refused(tmp_path: Path) -> None:
    conf = tmp_path / "postgresql.conf"
    conf.write_bytes(b"shared_buffers = 128MB\n")
    (tmp_path / "postgresql.auto.conf").write_bytes(b"shared_buffers = '1GB'\n")
    knob = ConfigFileActuator(file=str(conf), key="shared_buffers")
    with pytest.raises(ActuationError, match=r"postgresql\.auto\.conf line 1 \(which PostgreSQL"):
        knob.get()
    (tmp_path / "postgresql.auto.conf").write_bytes(b"work_mem = '8MB'\n")
    assert knob.get() == "128MB"


def test_a_symlink_loop_and_an_immutable_file_are_one_line_each(tmp_path: Path) -> None:
    loop = tmp_path / "loop.conf"
    loop.symlink_to(tmp_path / "other.conf")
    (tmp_path / "other.conf").symlink_to(loop)
    knob = ConfigFileActuator(file=str(loop), key="k")
    assert knob.setting().startswith("file:")
    with pytest.raises(ActuationError, match="symbolic links"):
        knob.get()
    path = tmp_path / "fixed.conf"
    path.write_bytes(b"k = 1\n")
    subprocess.run(["chattr", "+i", str(path)], check=True)
    try:
        fixed = ConfigFileActuator(file=str(path), key="k")
        with pytest.raises(ActuationError, match="read-only"):
            fixed.check_writable()
        with pytest.raises(ActuationError, match="cannot write"):
            fixed.apply("2")
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)
    assert path.read_bytes() == b"k = 1\n"
