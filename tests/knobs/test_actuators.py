"""Actuators against the real kernel and real files: set, read back, refuse clearly."""

from __future__ import annotations

import os
import random
import string
from pathlib import Path

import pytest

from hone.errors import ActuationError
from hone.journal import Journal
from hone.knobs import actuator_from_spec
from hone.knobs.script import ScriptActuator
from hone.knobs.shell import ShellActuator, set_script
from hone.workload.launch import LaunchSpec

THP = "/sys/kernel/mm/transparent_hugepage/enabled"


@pytest.fixture
def thp():
    original = Path(THP).read_text()
    yield
    selected = original.split("[")[1].split("]")[0]
    Path(THP).write_text(selected)


def test_sysfs_bracketed_selection(thp) -> None:
    actuator = actuator_from_spec({"kind": "sysfs", "path": THP})
    before = actuator.get()
    assert before in ("always", "madvise", "never")
    other = "never" if before != "never" else "madvise"
    actuator.apply(other)
    assert actuator.get() == other
    with pytest.raises(ActuationError, match="Invalid argument"):
        actuator.apply("bogus")
    assert actuator.get() == other
    with pytest.raises(ActuationError, match="not under /sys"):
        actuator_from_spec({"kind": "sysfs", "path": "/sys/../etc/passwd"}).get()


def test_sysctl_rejected_value_leaves_it_unchanged() -> None:
    actuator = actuator_from_spec({"kind": "sysctl", "key": "vm.swappiness"})
    before = actuator.get()
    try:
        actuator.apply("7")
        assert actuator.get() == "7"
        with pytest.raises(ActuationError):
            actuator.apply("-5")
        assert actuator.get() == "7"
    finally:
        actuator.set(before)


def test_a_read_only_sysctl_is_refused_before_any_write() -> None:
    ostype = actuator_from_spec({"kind": "sysctl", "key": "kernel.ostype"})
    with pytest.raises(ActuationError, match="read-only"):
        ostype.check_writable()
    actuator_from_spec({"kind": "sysctl", "key": "vm.swappiness"}).check_writable()


@pytest.mark.parametrize(
    ("fmt", "text", "key", "extra", "expected", "after"),
    [
        (
            "equals",
            "# c\nshared_buffers = '128MB'  # x\nwork_mem=4MB\n",
            "shared_buffers",
            {},
            "128MB",
            "# c\nshared_buffers = '256MB'  # x\nwork_mem=4MB\n",
        ),
        (
            "space",
            "port 6379\nmaxmemory 100mb\n# end\n",
            "maxmemory",
            {},
            "100mb",
            "port 6379\nmaxmemory 256MB\n# end\n",
        ),
        (
            "ini",
            "[a]\nlevel = 1\n[b]\nlevel = 2\n",
            "level",
            {"section": "b"},
            "2",
            "[a]\nlevel = 1\n[b]\nlevel = 256MB\n",
        ),
        (
            "regex",
            "X=1\nCOMPRESS_LEVEL = 6\n",
            "",
            {"pattern": r"^COMPRESS_LEVEL = (\S+)"},
            "6",
            "X=1\nCOMPRESS_LEVEL = 256MB\n",
        ),
    ],
)
def test_config_formats_round_trip(tmp_path, fmt, text, key, extra, expected, after) -> None:
    path = tmp_path / "app.conf"
    path.write_text(text)
    path.chmod(0o640)
    actuator = actuator_from_spec(
        {"kind": "config", "file": str(path), "format": fmt, "key": key, **extra}
    )
    assert actuator.get() == expected
    actuator.apply("256MB")
    assert path.read_text() == after
    assert path.stat().st_mode & 0o777 == 0o640
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".app.conf")]


def test_config_adds_a_missing_key_and_names_missing_files(tmp_path) -> None:
    path = tmp_path / "redis.conf"
    path.write_text("port 1\n")
    actuator = actuator_from_spec(
        {"kind": "config", "file": str(path), "format": "space", "key": "io-threads"}
    )
    with pytest.raises(ActuationError, match="key not found"):
        actuator.get()
    actuator.apply("2")
    assert path.read_text() == "port 1\nio-threads 2\n"
    missing = actuator_from_spec({"kind": "config", "file": str(tmp_path / "no"), "key": "k"})
    with pytest.raises(ActuationError, match="cannot read"):
        missing.get()


def test_flag_and_env_edit_the_launch() -> None:
    launch = LaunchSpec(["memcached", "-p", "1"])
    threads = actuator_from_spec({"kind": "flag", "flag": "-t"}, launch=launch)
    size = actuator_from_spec({"kind": "flag", "flag": "--size", "style": "equals"}, launch=launch)
    arenas = actuator_from_spec({"kind": "env", "variable": "MALLOC_ARENA_MAX"}, launch=launch)
    assert not threads.readable and not threads.persistent and threads.needs_restart
    threads.apply("4")
    size.apply("64")
    arenas.apply("2")
    assert launch.command() == ["memcached", "-p", "1", "-t", "4", "--size=64"]
    assert launch.environment() == {"MALLOC_ARENA_MAX": "2"}
    with pytest.raises(ActuationError, match="needs a process"):
        actuator_from_spec({"kind": "flag", "flag": "-t"})


def test_flag_and_env_values_that_would_do_nothing_or_crash_are_refused() -> None:
    """A flag already on the command line would be given twice; a switch turned on with a word
    it does not know stayed off; a NUL byte made the start fail with a traceback."""
    launch = LaunchSpec(["memcached", "-t", "4", "--size=64"])
    for flag in ("-t", "--size"):
        with pytest.raises(ActuationError, match="already in the workload's command"):
            actuator_from_spec({"kind": "flag", "flag": flag}, launch=launch)
    verbose = actuator_from_spec({"kind": "flag", "flag": "-v", "style": "switch"}, launch=launch)
    with pytest.raises(ActuationError, match="of a switch must be one of"):
        verbose.apply("enabled")
    verbose.apply("on")
    with pytest.raises(ActuationError, match="NUL"):
        actuator_from_spec({"kind": "flag", "flag": "-c"}, launch=launch).apply("1\x00")
    with pytest.raises(ActuationError, match="NUL"):
        actuator_from_spec({"kind": "env", "variable": "GOGC"}, launch=launch).apply("1\x00")
    for name in ("", "A=B", "A\x00"):
        with pytest.raises(ActuationError):
            actuator_from_spec({"kind": "env", "variable": name}, launch=launch)
    assert launch.command() == ["memcached", "-t", "4", "--size=64", "-v"]


HOSTILE = [
    "a'b",
    'a"b',
    "$(touch PWNED)",
    "`touch PWNED`",
    "x; touch PWNED",
    "a\nb",
    "*",
    "-n",
    " spaced  out ",
    "$HOME",
    "\\",
    "'\"'\"'",
]


@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize(
    "template",
    [
        "printf %s $value > out",
        'printf %s "$value" > out',
        "printf '%s' '$value' > out",
        "sh -c 'printf %s \"$0\" > out' $value",
        "printf %s ${value} > out",  # A-Tune's other spelling (its redis and ceph projects)
        'printf %s "${value}" > out',
    ],
)
def test_shell_values_arrive_exactly_and_run_nothing(tmp_path, template, value) -> None:
    actuator = ShellActuator(set_command=template, get_command="cat out", cwd=str(tmp_path))
    actuator.set(value)
    assert (tmp_path / "out").read_text() == value
    assert not (tmp_path / "PWNED").exists()


def test_atune_sed_template_in_single_quotes(tmp_path) -> None:
    (tmp_path / "conf").write_text('MAXCONN="1024"\n')
    actuator = ShellActuator(
        set_command="sed -i 's/^MAXCONN.*$/MAXCONN=\"$value\"/g' conf",
        get_command="grep MAXCONN conf | cut -d'\"' -f2",
        cwd=str(tmp_path),
    )
    actuator.apply("1344")
    assert (tmp_path / "conf").read_text() == 'MAXCONN="1344"\n'


def test_atune_braced_placeholder_in_a_shell_test(tmp_path) -> None:
    """A-Tune's redis project: `if [ "${value}" = "off" ]; then ...` turns saving off; with the
    braced spelling unreplaced the test compared an empty string and never fired."""
    (tmp_path / "conf").write_text("save 900 1\n")
    actuator = ShellActuator(
        set_command='if [ "${value}" = "off" ]; then sed -i "s/^save.*/#&/g" conf; fi',
        cwd=str(tmp_path),
    )
    actuator.set("off")
    assert (tmp_path / "conf").read_text() == "#save 900 1\n"


def test_random_values_round_trip(tmp_path) -> None:
    rng = random.Random(7)
    alphabet = string.printable.replace("\x0b", "").replace("\x0c", "").replace("\r", "")
    actuator = ShellActuator(set_command='printf %s "$value" > out', cwd=str(tmp_path))
    for _ in range(40):
        value = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30)))
        actuator.set(value)
        assert (tmp_path / "out").read_text() == value


def test_journal_survives_a_crash_and_restores_newest_first(tmp_path) -> None:
    files = [tmp_path / f"k{i}" for i in range(3)]
    for index, path in enumerate(files):
        path.write_text(f"{index}\n")
    actuators = [
        ShellActuator(set_command=f"echo $value > {p}", get_command=f"cat {p}") for p in files
    ]
    journal = Journal.for_project("crash")
    journal.begin()
    for index, actuator in enumerate(actuators):
        journal.remember(f"k{index}", actuator)
        actuator.apply("99")
    with open(journal.path, "a") as handle:
        handle.write('{"op": "set", "na')  # torn by the crash
    reopened = Journal.for_project("crash")
    assert reopened.unfinished() is not None
    outcomes = reopened.restore()
    assert [o.name for o in outcomes] == ["k2", "k1", "k0"]
    assert [p.read_text() for p in files] == ["0\n", "1\n", "2\n"]
    assert not Journal.for_project("crash").has_changes()
    assert os.listdir(journal.path.parent)  # the archive is kept


def test_a_value_read_that_is_not_utf8_is_refused_not_mangled(tmp_path, monkeypatch) -> None:
    """A get that prints a Latin-1 byte (`café` in ISO-8859-1) was read as `caf\ufffd`: recorded
    as the original, restore wrote U+FFFD's three bytes over the one that was there. Refused,
    as a config knob refuses such a value, before anything changes."""
    (tmp_path / "out").write_bytes(b"caf\xe9\n")
    actuator = ShellActuator(set_command='printf %s "$value" > out', get_command="cat out",
                             cwd=str(tmp_path))  # fmt: skip
    with pytest.raises(ActuationError, match=r"bytes that are not UTF-8 \(byte 3\)"):
        actuator.get()
    (tmp_path / "out").write_bytes("café\n".encode())
    assert actuator.get() == "café"

    folder = tmp_path / "scripts" / "latin"
    folder.mkdir(parents=True)
    (folder / "get.sh").write_bytes(b"printf 'caf\\351\\n'\n")
    (folder / "set.sh").write_text("true\n")
    monkeypatch.setenv("HONE_SCRIPT_PATH", str(tmp_path / "scripts"))
    with pytest.raises(ActuationError, match=r"get\.sh printed bytes that are not UTF-8"):
        ScriptActuator(name="latin").get()


def test_a_value_in_a_here_document_arrives_without_quotes(tmp_path) -> None:
    """A here-document's quotes are text: `$value` became `"${HONE_VALUE}"` there, and the file
    got `k="ab c"` for `ab c` (its get then read back another value than the one set). In a
    quoted here-document (`<<'EOF'`) the shell expands nothing: refused when the knob is made,
    where it wrote `${HONE_VALUE}` into the file."""
    value = 'ab c"$(touch PWNED)`x`'
    for template in (
        "cat > out <<EOF\nk=$value\nEOF",
        "cat > out <<-EOF\n\tk=$value\n\tEOF",
        "cat > out <<A; true <<B\nk=${value}\nA\n$value\nB",
    ):
        ShellActuator(set_command=template, cwd=str(tmp_path)).set(value)
        assert (tmp_path / "out").read_text() == f"k={value}\n", template
    assert not (tmp_path / "PWNED").exists()
    # a shift is no here-document: its operand is expanded as it was before
    assert set_script("echo $(( 1 << $value )) > f") == 'echo $(( 1 << "${HONE_VALUE}" )) > f'
    with pytest.raises(ActuationError, match=r"stands in a quoted here-document \(<<'EOF'\)"):
        ShellActuator(set_command="cat > out <<'EOF'\nk=$value\nEOF", cwd=str(tmp_path))


def test_a_failing_commands_colours_stay_out_of_its_reason(tmp_path) -> None:
    """A tool that colours its errors: `benchmark exited 3: line1 | \\x1b[31mred\\x1b[0m | line3`
    went into the trial's reason as it was, and `hone show | cat` wrote the escape codes."""
    from hone.shell import run

    script = "printf 'line1\\n\\033[31mred\\033[0m\\033]0;title\\007\\nbell\\007\\n' >&2; exit 3"
    assert run(script, cwd=str(tmp_path)).tail() == "line1 | red | bell\\x07"
