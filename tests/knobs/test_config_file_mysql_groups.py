"""mariadbd reads an option from every group it reads ([mysqld], [mariadb], [server], ...), in
file order, and the line read last wins: a knob on [mysqld] whose option is set again under
another such group, in its file or one it includes, is refused with that line, since an edit
under [mysqld] could do nothing. Which groups count is checked against the server's own option
reader (my_print_defaults --mysqld) and a real mariadbd."""

from __future__ import annotations

import subprocess
from pathlib import Path

from hone.errors import ActuationError
from hone.journal import Journal
from hone.knobs.config_file import ConfigFileActuator
from tests.knobs.test_config_file_dialects import refusal
from tests.knobs.test_config_file_mysql_includes import every_file, server_reads

POOL = "innodb_buffer_pool_size"


def refused_line(where: Path | str, line: int, group: str, how: str = "") -> str:
    return (
        f"{POOL}: {where} line {line} sets it under [{group}]{how}, which the server reads "
        "besides [mysqld]: the line it reads last wins, so an edit under [mysqld] could do "
        "nothing; keep one line and give its group as the knob's section"
    )


def test_an_option_set_again_under_mariadb_in_an_included_file_is_refused_until_one_is_kept(
    tmp_path: Path,
) -> None:
    """The real server runs on the [mariadb] value read after the [mysqld] one: hone refuses the
    knob on [mysqld] and changes nothing; with the [mysqld] line gone and the knob on [mariadb],
    hone edits the included file, the server reads the new value, and restore gives it back."""
    root = tmp_path / "etc"
    for folder in (root, tmp_path / "first", tmp_path / "second"):
        folder.mkdir()
    late = root / "late.cnf"
    late.write_bytes(b"[client]\nuser = nobody\n[mariadb]\ninnodb-buffer-pool-size = 96M\n")
    main = root / "my.cnf"
    main.write_bytes(f"[mysqld]\n{POOL} = 48M\n!include {late}\n".encode())
    before = every_file(root)
    assert server_reads(main, tmp_path / "first") == 96 << 20
    knob = ConfigFileActuator(file=str(main), key=POOL, format="ini", section="mysqld")
    spelled = " as " + POOL.replace("_", "-")
    assert refusal(knob.apply, "64M") == refused_line(late, 4, "mariadb", spelled)
    assert every_file(root) == before

    main.write_bytes(f"[mysqld]\n!include {late}\n".encode())
    before = every_file(root)
    knob = ConfigFileActuator(file=str(main), key=POOL, format="ini", section="mariadb")
    journal = Journal.for_project("mysql-groups")
    assert journal.remember(POOL, knob) == "96M"
    knob.apply("64M")
    assert late.read_bytes() == before[str(late)].replace(b"96M", b"64M")
    assert server_reads(main, tmp_path / "second") == 64 << 20
    assert all(o.ok for o in journal.restore())
    assert every_file(root) == before


def test_the_groups_refused_are_those_the_server_reads_and_other_versions_groups(
    tmp_path: Path,
) -> None:
    """For each group, a file setting the option under [mysqld] and again under it: hone refuses
    every group my_print_defaults --mysqld reads (any case), and besides them only the groups of
    other server versions, which hone cannot tell from the file are not the running one's."""
    groups = [
        "mariadb", "MARIADB", "server", "mysqld-10.11", "mariadb-10.11", "mariadbd",
        "mariadbd-10.11", "client-server", "galera", "client", "mysqldump", "mysqld_safe",
        " mysqld ", "mysqld-8.0", "mariadb-10.6",
    ]  # fmt: skip
    read, refused = set(), set()
    for number, group in enumerate(groups):
        path = tmp_path / f"{number}.cnf"
        path.write_text(f"[mysqld]\n{POOL} = 48M\n[{group}]\nloose_{POOL} = 96M\n")
        shown = subprocess.run(
            ["my_print_defaults", f"--defaults-file={path}", "--mysqld"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        if "96M" in shown:
            read.add(group)
        knob = ConfigFileActuator(file=str(path), key=POOL, format="ini", section="mysqld")
        try:
            value = knob.get()
        except ActuationError as exc:
            assert str(exc) == refused_line(path, 4, group, f" as loose_{POOL}")
            refused.add(group)
        else:
            assert value == "48M"
    assert "mariadb" in read
    assert refused - read == {"mysqld-8.0", "mariadb-10.6"}
    assert read <= refused


def test_a_single_file_read_as_text_refuses_a_later_group_too(tmp_path: Path) -> None:
    """A remote host's file comes to hone as text (value_in, edited): the same line is named,
    whether the other group comes before or after [mysqld]."""
    knob = ConfigFileActuator(file="/etc/mysql/my.cnf", key=POOL, format="ini", section="mysqld")
    after = f"[mysqld]\r\n{POOL} = 48M\r\n\r\n[server]\r\n{POOL}=96M\r\n"
    before = f"[client-server]\n{POOL} = 96M\n[mysqld]\n{POOL} = 48M\n"
    assert refusal(knob.value_in, after) == refused_line("/etc/mysql/my.cnf", 5, "server")
    assert refusal(lambda text: knob.edited(text, "64M"), before).startswith(
        f"{POOL}: /etc/mysql/my.cnf line 2 sets it under [client-server],"
    )
