"""The hosts, ssh and group keys of a project: each mistake is one line naming file, line, key."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hone.errors import HoneError
from hone.project import load_project

HEAD = """name: c
ssh: {user: root}
hosts:
  brokers:
    - {name: b1, address: 10.0.0.1}
    - b2
  clients: [c1, b1]
"""
TAIL = """benchmark: {command: 'echo s: 1', host: c1}
metrics: {s: {pattern: 's: (\\d+)', direction: maximize}}
"""


def _load(tmp_path: Path, text: str):
    path = tmp_path / "hone.yaml"
    path.write_text(text)
    return load_project(path)


def test_groups_hosts_and_knob_groups_load(tmp_path: Path):
    knobs = "knobs:\n  k: {type: int, range: [1, 9], sysctl: net.core.somaxconn, group: brokers}\n"
    project = _load(tmp_path, HEAD + knobs + TAIL)
    assert project.groups == {"brokers": ["b1", "b2"], "clients": ["c1", "b1"]}
    assert project.hosts["b1"].address == "10.0.0.1" and project.hosts["b2"].address == "b2"
    assert project.knob("k").group == "brokers" and project.benchmark.host == "c1"


@pytest.mark.parametrize(
    ("change", "line", "words"),
    [
        ("    - {name: b1, address: 10.0.0.1, password: x}", 5, "passwords are never kept"),
        (
            "knobs:\n  k: {type: int, range: [1, 9], sysctl: vm.x, group: nope}",
            9,
            "no group 'nope'",
        ),
        ("knobs:\n  k: {type: int, range: [1, 9], flag: -k, group: brokers}", 9, "flag"),
        ("benchmark: {command: 'echo', host: zz}", 10, "no host 'zz'"),
    ],
)
def test_mistakes_are_one_line(tmp_path: Path, change: str, line: int, words: str):
    text = HEAD + "knobs:\n  k: {type: int, range: [1, 9], sysctl: vm.x, group: brokers}\n" + TAIL
    if change.startswith("    - {name: b1"):
        text = text.replace("    - {name: b1, address: 10.0.0.1}", change)
    elif change.startswith("knobs:"):
        text = HEAD + change + "\n" + TAIL
    else:
        text = text.replace("benchmark: {command: 'echo s: 1', host: c1}", change)
    with pytest.raises(HoneError) as error:
        _load(tmp_path, text)
    message = str(error.value)
    assert words in message and "\n" not in message, message
    assert f"hone.yaml:{line}:" in message, message


def test_hone_worker_refuses_a_cluster_project(tmp_path: Path, hone_cli, hone_home: Path):
    knobs = "knobs:\n  k: {type: int, range: [1, 9], sysctl: net.core.somaxconn, group: brokers}\n"
    (tmp_path / "hone.yaml").write_text(HEAD + knobs + TAIL)
    storage = f"sqlite:///{hone_home / 'shared.db'}"
    result = hone_cli("worker", str(tmp_path / "hone.yaml"), "--storage", storage)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "not with `hone worker`" in result.stderr and result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr


WORKLOAD_HEAD = """name: c
hosts:
  brokers:
    hosts: [b1, b2]
    workload: {start: 'svc start', stop: 'svc stop', ready: 'svc ready', ready_timeout: 30}
  clients: [c1]
"""
CONFIG_KNOB = (
    "knobs:\n  k: {type: int, range: [1, 9], config: {file: /etc/b.conf, key: k}, group: %s}\n"
)


def test_a_group_workload_makes_its_config_knobs_restart(tmp_path: Path, hone_cli):
    project = _load(tmp_path, WORKLOAD_HEAD + CONFIG_KNOB % "brokers" + TAIL)
    workload = project.group_workloads["brokers"]
    assert (workload.start, workload.ready_timeout) == ("svc start", 30.0)
    assert project.knob("k").restart and project.groups["brokers"] == ["b1", "b2"]
    on_clients = _load(tmp_path, WORKLOAD_HEAD + CONFIG_KNOB % "clients" + TAIL)
    assert not on_clients.knob("k").restart  # no workload there: read by the next run
    shown = hone_cli("check", str(tmp_path / "hone.yaml"))
    assert shown.returncode == 0, shown.stderr
    assert "group brokers: b1" in shown.stdout


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        (
            WORKLOAD_HEAD.replace(", ready: 'svc ready'", "") + CONFIG_KNOB % "brokers",
            5,
            "missing required key 'ready'",
        ),
        (
            WORKLOAD_HEAD
            + "knobs:\n  k: {type: int, range: [1, 9], config: {file: /etc/b.conf, key: k},"
            " group: clients, restart: true}\n",
            8,
            "group 'clients' has no workload",
        ),
        (
            WORKLOAD_HEAD.replace("hosts: [b1, b2]", "hostz: [b1]") + CONFIG_KNOB % "brokers",
            4,
            "hostz",
        ),
    ],
)
def test_workload_mistakes_are_one_line(tmp_path: Path, text: str, line: int, words: str):
    with pytest.raises(HoneError) as error:
        _load(tmp_path, text + TAIL)
    message = str(error.value)
    assert words in message and "\n" not in message, message
    assert f"hone.yaml:{line}:" in message, message


ONE_KNOB = "knobs:\n  k: {type: int, range: [1, 9], sysctl: net.core.somaxconn, group: brokers}\n"


@pytest.mark.parametrize(
    ("hosts", "line", "words"),
    [
        (
            "    - {name: b1, address: 10.0.0.1}\n    - {name: b2, address: 10.0.0.1}\n",
            5,
            "host 'b2' is 10.0.0.1 port 22, as host 'b1' is",
        ),
        ("    - {name: b1, address: Box}\n    - box\n", 5, "host 'box' is box port 22"),
    ],
)
def test_one_machine_under_two_names_is_one_line(tmp_path: Path, hosts: str, line: int, words: str):
    """Two names for one address and port would write its knobs twice at once (each trial
    failing on a file changed under it) and journal them twice: refused where it is said."""
    text = "name: c\nhosts:\n  brokers:\n" + hosts + "  clients: [c1]\n" + ONE_KNOB + TAIL
    with pytest.raises(HoneError) as error:
        _load(tmp_path, text)
    message = str(error.value)
    assert words in message and "\n" not in message, message
    assert f"hone.yaml:{line}:" in message, message


def test_a_name_again_or_another_port_is_not_a_second_name(tmp_path: Path):
    hosts = "    - {name: b1, address: 10.0.0.1}\n    - {name: b2, address: 10.0.0.1, port: 2}\n"
    text = "name: c\nhosts:\n  brokers:\n" + hosts + "  clients: [c1, b1]\n" + ONE_KNOB + TAIL
    project = _load(tmp_path, text)
    assert project.groups == {"brokers": ["b1", "b2"], "clients": ["c1", "b1"]}


def test_a_key_file_ssh_would_pass_over_is_one_line(tmp_path: Path):
    """ssh ignores a private key that others may read, and every host then answered
    `Permission denied (publickey)`; the project names the file and the fix instead. A public
    key (the .pub of a key in ssh-agent) is not refused."""
    key = tmp_path / "id"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    text = "name: c\nssh: {identity: id}\nhosts:\n  brokers: [b1]\n" + ONE_KNOB + TAIL
    text = text.replace("host: c1", "host: b1")
    key.chmod(0o644)
    with pytest.raises(HoneError) as error:
        _load(tmp_path, text)
    message = str(error.value)
    assert message.startswith(f"{tmp_path / 'hone.yaml'}:2: identity: {key} can be read by")
    assert f"(chmod 600 {key})" in message and "\n" not in message, message
    key.chmod(0o600)
    assert _load(tmp_path, text).hosts["b1"].identity == str(key)
    public = _load(tmp_path, text.replace("identity: id}", "identity: id.pub}"))
    assert public.hosts["b1"].identity == f"{key}.pub"


@pytest.mark.parametrize(
    ("groups", "knobs", "line", "words"),
    [
        ("", ("", ""), 10, "knobs 'k' and 'k2' both set sysctl:net.core.somaxconn: each"),
        (
            "  others: [c1, b2]\n",
            (", group: brokers", ", group: others"),
            11,
            "both set sysctl:net.core.somaxconn on host b2: each",
        ),
    ],
)
def test_two_knobs_of_one_setting_on_one_machine_are_one_line(
    tmp_path: Path, groups: str, knobs: tuple[str, str], line: int, words: str
):
    """The second would write its value over the first's: here, trials recorded values never
    run; on a host, every trial failed reading back the first knob's value."""

    def text(first: str, second: str) -> str:
        return (
            HEAD.replace("  clients: [c1, b1]\n", "  clients: [c1, b1]\n" + groups)
            + "knobs:\n"
            + f"  k: {{type: int, range: [1, 9], sysctl: net.core.somaxconn{first}}}\n"
            + f"  k2: {{type: int, range: [1, 9], sysctl: net/core/somaxconn{second}}}\n"
            + TAIL
        )

    with pytest.raises(HoneError) as error:
        _load(tmp_path, text(*knobs))
    message = str(error.value)
    assert words in message and "\n" not in message, message
    assert f"hone.yaml:{line}: k2:" in message, message
    # one on the hosts, one here: two machines, two settings
    apart = _load(tmp_path, text(", group: brokers", ""))
    assert [k.group for k in apart.knobs] == ["brokers", None]


@pytest.mark.parametrize(
    ("address", "loads"),
    [
        ("'::1'", True),
        ("'fe80::1%eth0'", True),
        ("'::ffff:10.0.0.1'", True),
        ("'fe80::1%eth0;id'", False),
        ("'[::1]'", False),
        ("'::1 x'", False),
    ],
)
def test_ipv6_addresses_that_start_with_a_colon_load(tmp_path: Path, address: str, loads: bool):
    """`::1` or a link-local address with its interface was refused as no host name or IP
    address (the check wanted a letter or digit first); what is no address stays refused."""
    text = HEAD.replace("address: 10.0.0.1", f"address: {address}") + ONE_KNOB + TAIL
    if loads:
        assert _load(tmp_path, text).hosts["b1"].address == address.strip("'")
    else:
        with pytest.raises(HoneError, match=r"hone.yaml:5: address: .* is not a host name or IP"):
            _load(tmp_path, text)
