"""The `ssh` and `hosts` sections of a cluster project: host groups reached over OpenSSH.

Passwords are refused: hosts are reached with keys only, and their host keys are checked
against a known_hosts file (docs/cluster.md)."""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hone.cluster.ssh import HOST_NAME, Host
from hone.cluster.workload import HostWorkload
from hone.project.common import boolean, check_keys, expect_mapping, number, text
from hone.project.yamlio import Node, NodeList

WORKLOAD_KEYS = ("start", "stop", "ready", "ready_timeout")
HOST_KEYS = ("name", "address", "user", "port", "identity", "known_hosts")
SECRET_KEYS = ("password", "passphrase", "secret")
_ADDRESS = re.compile(r"[A-Za-z0-9][A-Za-z0-9.:_-]*")
_USER = re.compile(r"[a-z_][a-z0-9_.-]*[$]?")


@dataclass
class Hosts:
    """A project's hosts by name, each group's host names, and the groups' workloads."""

    hosts: dict[str, Host] = field(default_factory=dict)
    groups: dict[str, list[str]] = field(default_factory=dict)
    workloads: dict[str, HostWorkload] = field(default_factory=dict)


def parse_hosts(doc: Node, directory: Path) -> Hosts:
    """Every host and group (empty when the project has none). A group is a list of hosts, or
    a mapping of that list (`hosts`) and the `workload` run on each of them."""
    if doc.get("hosts") is None:
        if doc.get("ssh") is not None:
            raise doc.error("ssh", "ssh settings need a hosts section")
        return Hosts()
    defaults = _defaults(doc, directory)
    groups_node = expect_mapping(doc["hosts"], doc, "hosts")
    hosts: dict[str, Host] = {}
    groups: dict[str, list[str]] = {}
    workloads: dict[str, HostWorkload] = {}
    #: (address, port) -> the host name it was first given under
    machines: dict[tuple[str, int], str] = {}
    for group, items in groups_node.items():
        if not HOST_NAME.fullmatch(group):
            raise groups_node.error(group, "a group name is letters, digits, '_' or '-'")
        if isinstance(items, Node):
            check_keys(items, ("hosts", "workload"), required=("hosts",))
            if items.get("workload") is not None:
                workloads[group] = _workload(expect_mapping(items["workload"], items, "workload"))
            items_node, items = items, items["hosts"]
            if not isinstance(items, NodeList) or not items:
                raise items_node.error("hosts", f"group {group!r} needs a list of hosts")
        if not isinstance(items, NodeList) or not items:
            raise groups_node.error(group, f"group {group!r} needs a list of hosts")
        groups[group] = []
        for index, item in enumerate(items):
            host = _host(item, items, index, defaults, directory)
            known = hosts.get(host.name)
            if known is not None and known != host and not isinstance(item, str):
                raise items.error(index, f"host {host.name!r} is given twice, differently")
            hosts.setdefault(host.name, host)
            _one_name(host, machines, item, items, index)
            if host.name in groups[group]:
                raise items.error(index, f"host {host.name!r} twice in group {group!r}")
            groups[group].append(host.name)
    return Hosts(hosts, groups, workloads)


def _one_name(
    host: Host, machines: dict[tuple[str, int], str], item: Any, items: NodeList, index: int
) -> None:
    """One machine, one name: under two names its knobs would be written twice at once by two
    sessions (the second finds the file changed under it and every trial fails), journaled
    twice and restarted twice. The address and port are the machine (the user is not: two
    users of one sshd still share its files and sysctls)."""
    other = machines.setdefault((host.address.lower(), host.port), host.name)
    if other == host.name:
        return
    message = (
        f"host {host.name!r} is {host.address} port {host.port}, as host {other!r} is: "
        f"name a machine once (its name again puts it in another group)"
    )
    if isinstance(item, Node) and "address" in item:
        raise item.error("address", message)
    raise items.error(index, message)


def _workload(node: Node) -> HostWorkload:
    """start, stop and ready are all needed: ready is how a restart is known to have worked."""
    check_keys(node, WORKLOAD_KEYS, required=("start", "stop", "ready"))
    return HostWorkload(
        start=text(node, "start") or "",
        stop=text(node, "stop") or "",
        ready=text(node, "ready") or "",
        ready_timeout=number(node, "ready_timeout", 60.0, low=1.0),
    )


def _defaults(doc: Node, directory: Path) -> dict[str, Any]:
    if doc.get("ssh") is None:
        return {}
    node = expect_mapping(doc["ssh"], doc, "ssh")
    _refuse_secrets(node)
    check_keys(node, ("user", "port", "identity", "known_hosts"))
    return _fields(node, directory)


def _host(
    item: Any, items: NodeList, index: int, defaults: dict[str, Any], directory: Path
) -> Host:
    if isinstance(item, str):
        item_node = Node({"name": item})
        item_node.file, item_node.line, item_node.key_lines = items.file, None, {}
        item_node.line = items.item_lines[index]
        item = item_node
    if not isinstance(item, Node):
        raise items.error(index, "a host is a name or a mapping (name, address, ...)")
    _refuse_secrets(item)
    check_keys(item, HOST_KEYS, required=("name",))
    name = text(item, "name") or ""
    if not HOST_NAME.fullmatch(name):
        raise item.error("name", "a host name is 1-63 letters, digits, '_' or '-'")
    fields = {**defaults, **_fields(item, directory)}
    address = text(item, "address") or name
    if not (_ADDRESS.fullmatch(address) or _ipv6(address)):
        raise item.error("address", f"{address!r} is not a host name or IP address")
    return Host(name=name, address=address, **fields)


def _ipv6(address: str) -> bool:
    """An IPv6 address that is no host name's shape: `::1`, `::ffff:10.0.0.1`, a link-local
    address with its interface (`fe80::1%eth0`)."""
    scope = address.partition("%")[2]
    if "%" in address and not re.fullmatch(r"[A-Za-z0-9_.-]{1,15}", scope):
        return False  # an interface's name, nothing a shell or ssh's tokens would read
    try:
        return isinstance(ipaddress.ip_address(address), ipaddress.IPv6Address)
    except ValueError:
        return False


def _fields(node: Node, directory: Path) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if node.get("user") is not None:
        user = text(node, "user") or ""
        if not _USER.fullmatch(user):
            raise node.error("user", f"{user!r} is not a user name")
        fields["user"] = user
    if node.get("port") is not None:
        fields["port"] = number(node, "port", integer=True, low=1, high=65535)
    for key in ("identity", "known_hosts"):
        if node.get(key) is not None:
            path = Path(text(node, key) or "").expanduser()
            path = path if path.is_absolute() else directory / path
            if not path.is_file():
                raise node.error(key, f"no such file: {path}")
            if key == "identity":
                _usable_key(node, path)
            fields[key] = str(path)
    return fields


def _usable_key(node: Node, path: Path) -> None:
    """A private key others may read is passed over by ssh (`bad permissions`), so every host
    answered `Permission denied (publickey)` without the reason. (A public key is not checked:
    naming the .pub of a key held by ssh-agent is how ssh is told which agent key to use.)"""
    try:
        with open(path, "rb") as key:
            public = re.match(rb"(ssh|ecdsa|sk)-[a-z0-9@.-]+ ", key.read(64)) is not None
    except OSError as exc:
        raise node.error("identity", f"cannot read {path}: {exc.strerror}") from None
    mode = path.stat()
    if not public and mode.st_uid == os.geteuid() and mode.st_mode & 0o077:
        raise node.error(
            "identity",
            f"{path} can be read by other users (mode {mode.st_mode & 0o777:04o}): ssh will not "
            f"use such a private key (chmod 600 {path})",
        )


def _refuse_secrets(node: Node) -> None:
    for key in SECRET_KEYS:
        if key in node:
            raise node.error(
                key, "passwords are never kept in project files: use a key file (identity)"
            )


#: A metric's keys that read it on hosts of the cluster instead of the benchmark's output.
PLACE_KEYS = ("host", "group", "aggregate", "delta")
AGGREGATES = ("sum", "mean", "max", "min")


def metric_place(
    spec: Node, name: str, hosts: dict[str, Host], groups: dict[str, list[str]]
) -> dict[str, Any]:
    """Where a metric is read: {} for the benchmark's output, else `host` or `group` (with its
    `aggregate`) and `delta`. Such a metric is a `command` run there, its number the last line
    of that command's output (or what `pattern` takes from it)."""
    if spec.get("host") is None and spec.get("group") is None:
        for key in ("aggregate", "delta"):
            if key in spec:
                raise spec.error(key, f"metric {name!r}: {key} needs a host or group to read on")
        return {}
    if spec.get("host") is not None and spec.get("group") is not None:
        raise spec.error("group", f"metric {name!r}: give host or group, not both")
    if spec.get("command") is None:
        raise spec.error(None, f"metric {name!r}: a metric read on hosts needs a command")
    if "$out" in (text(spec, "command") or ""):
        raise spec.error(
            "command", f"metric {name!r}: $out is the benchmark's output, not a host's"
        )
    place: dict[str, Any] = {"delta": boolean(spec, "delta", False)}
    host, group = text(spec, "host"), text(spec, "group")
    if host is not None:
        if host not in hosts:
            raise spec.error("host", f"metric {name!r}: no host {host!r} in hosts")
        if "aggregate" in spec:
            raise spec.error("aggregate", f"metric {name!r}: one host needs no aggregate")
        return {**place, "host": host}
    if group not in groups:
        known = ", ".join(groups) or "none: add a hosts section"
        raise spec.error("group", f"metric {name!r}: no group {group!r} ({known})")
    aggregate = text(spec, "aggregate")
    if aggregate not in AGGREGATES:
        raise spec.error(
            "aggregate",
            f"metric {name!r}: a group's values need aggregate: {', '.join(AGGREGATES)}",
        )
    return {**place, "group": group, "aggregate": aggregate}
