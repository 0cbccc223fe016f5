"""Config-file knobs read a key as the program does: MySQL and MariaDB take `a-b` and `a_b` for
one option (the last line wins), and nginx resolves a relative include against the folder of
its main file, in every file it reads. A key set again under either is refused in one line,
naming the files, lines and key, before anything changes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hone.errors import ActuationError
from hone.journal import Journal
from hone.knobs.config_file import ConfigFileActuator


def refusal(step, value: str) -> str:
    """The one line a knob's read or edit (`step`, given `value`) is refused with."""
    with pytest.raises(ActuationError) as info:
        step(value)
    return str(info.value)


POOL = "innodb_buffer_pool_size"


def test_a_mysql_option_set_again_in_its_other_spelling_is_refused(tmp_path: Path) -> None:
    """mariadbd --verbose --help gives 96M for this file: one option, the last line wins."""
    path = tmp_path / "my.cnf"
    text = b"[mysqld]\ninnodb_buffer_pool_size = 64M\ninnodb-buffer-pool-size = 96M\n"
    path.write_bytes(text)
    knob = ConfigFileActuator(file=str(path), key=POOL, format="ini", section="mysqld")
    for attempt in (knob.get, lambda: knob.apply("128M")):
        with pytest.raises(ActuationError) as info:
            attempt()
        message = str(info.value)
        assert "\n" not in message and str(path) in message and "lines 2 and 3" in message
        assert "innodb-buffer-pool-size" in message and POOL in message
    assert path.read_bytes() == text


@pytest.mark.parametrize(
    ("name", "section", "fmt"),
    [("my.cnf", "mysqld", "ini"), ("50-server.cnf", None, "equals"), ("db.ini", "mariadb", "ini")],
)
def test_a_mysql_option_spelled_with_dashes_is_edited_in_place(
    tmp_path: Path, name: str, section: str | None, fmt: str
) -> None:
    path = tmp_path / name
    group = section or "mysqld"
    text = f"[{group}]\r\ninnodb-buffer-pool-size = 64M  # a quarter\r\nport = 3306\r\n".encode()
    path.write_bytes(text)
    knob = ConfigFileActuator(file=str(path), key=POOL, format=fmt, section=section)
    journal = Journal.for_project("dashes")
    assert journal.remember(POOL, knob) == "64M"
    knob.apply("128M")
    assert path.read_bytes() == text.replace(b"64M", b"128M")
    assert all(o.ok for o in journal.restore())
    assert path.read_bytes() == text
    # Outside MySQL's files the two spellings stay two keys.
    other = tmp_path / "app.conf"
    other.write_bytes(text)
    with pytest.raises(ActuationError, match="key not found"):
        ConfigFileActuator(file=str(other), key=POOL, format=fmt).get()


def test_a_mysql_option_set_again_in_an_includedir_file_is_refused(tmp_path: Path) -> None:
    """!includedir reads the .cnf files only: mariadbd leaves a .cnf.bak beside them unread."""
    conf_d = tmp_path / "conf.d"
    conf_d.mkdir()
    (conf_d / "old.cnf.bak").write_bytes(b"[mysqld]\ninnodb_buffer_pool_size = 1G\n")
    path = tmp_path / "my.cnf"
    text = f"[mysqld]\n{POOL} = 64M\n!includedir {conf_d}\n".encode()
    path.write_bytes(text)
    knob = ConfigFileActuator(file=str(path), key=POOL, format="ini", section="mysqld")
    assert knob.get() == "64M"
    tuned = conf_d / "tune.cnf"
    tuned.write_bytes(b"[mysqld]\nmax-connections = 80\ninnodb-buffer-pool-size = 96M\n")
    assert refusal(knob.apply, "128M") == (
        f"{POOL}: set in {path} line 2 and again in {tuned} line 3 as innodb-buffer-pool-size "
        f"(included from {path} line 3): the program reads one of them, so an edit of the "
        "other could do nothing; keep one"
    )
    added = ConfigFileActuator(
        file=str(path), key="max_connections", format="ini", section="mysqld"
    )
    assert added.get() == "80"  # set in the included file only: edited there, where it is read
    added.apply("100")
    assert path.read_bytes() == text
    assert tuned.read_bytes() == b"[mysqld]\nmax-connections = 100\ninnodb-buffer-pool-size = 96M\n"


def _nginx_conf(root: Path, tuned: bytes) -> Path:
    """conf/nginx.conf includes sites/*.conf; sites/app.conf includes snippets/*.conf, which
    nginx takes in conf/, with `tuned` in snippets/tuning.conf."""
    conf = root / "conf"
    for folder in ("sites", "snippets"):
        (conf / folder).mkdir(parents=True)
    (conf / "nginx.conf").write_bytes(
        f"pid {root}/nginx.pid;\nerror_log {root}/error.log;\nevents {{}}\n"
        "http {\n    sendfile on;\n    include sites/*.conf;\n}\n".encode()
    )
    (conf / "sites" / "app.conf").write_bytes(
        b"tcp_nopush on;\ninclude snippets/*.conf;\nserver { listen 127.0.0.1:1; }\n"
    )
    (conf / "snippets" / "tuning.conf").write_bytes(tuned)
    return conf


def test_nginx_relative_includes_are_taken_in_the_main_files_folder(tmp_path: Path) -> None:
    conf = _nginx_conf(tmp_path, b"gzip on;\n")
    check = ["nginx", "-t", "-c", str(conf / "nginx.conf")]
    assert subprocess.run(check, capture_output=True, cwd=tmp_path).returncode == 0
    main = ConfigFileActuator(file=str(conf / "nginx.conf"), key="sendfile", format="space")
    site = ConfigFileActuator(
        file=str(conf / "sites" / "app.conf"), key="tcp_nopush", format="space"
    )
    assert (main.get(), site.get()) == ("on", "on")
    snippet = conf / "snippets" / "tuning.conf"
    snippet.write_bytes(b"gzip on;\nsendfile off;\ntcp_nopush off;\n")
    nginx = subprocess.run(check, capture_output=True, text=True, cwd=tmp_path)
    assert f'"sendfile" directive is duplicate in {snippet}:2' in nginx.stderr
    before = {p: p.read_bytes() for p in conf.rglob("*.conf")}
    for knob, key, line in ((main, "sendfile", 2), (site, "tcp_nopush", 3)):
        with pytest.raises(ActuationError) as info:
            knob.apply("off")
        message = str(info.value)
        assert "\n" not in message and message.startswith(f"{key}: set in {knob.file} line")
        assert f"again in {snippet} line {line} (included from {conf}/sites/app.conf line 2)" in (
            message
        )
    assert {p: p.read_bytes() for p in conf.rglob("*.conf")} == before
