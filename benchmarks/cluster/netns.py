"""A cluster on one machine: network namespaces joined by a bridge, an sshd in each.

Each "host" is a network namespace with its own address on a bridge in the root namespace, an
sshd listening on that address with a host key made for this test bed, the test bed's client key
as its only way in (no passwords), and a private directory mounted at one shared path (`mnt`) so
a config file at that path is a different file on every host. What the hosts share: the kernel,
so vm.* and kernel.* sysctls are one value for all of them; net.* sysctls are per namespace.

    python -m benchmarks.cluster.netns up 3 /tmp/bed     # prints the project's ssh/hosts YAML
    python -m benchmarks.cluster.netns down /tmp/bed

Used by tests/cluster and benchmarks/cluster/fanout.py (and by anything that needs real hosts
over real ssh on one machine)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

SSHD = "/usr/sbin/sshd"


def available() -> str | None:
    """Why a test bed cannot be built here, or None when it can."""
    if os.geteuid() != 0:
        return "needs root (ip netns, mount)"
    for tool in (SSHD, shutil.which("ssh"), shutil.which("ip"), shutil.which("unshare")):
        if not tool or not os.access(tool, os.X_OK):
            return "needs openssh-server, openssh-client, iproute2 and util-linux"
    return None


@dataclass
class Testbed:
    __test__ = False  # not a pytest class
    """`count` hosts under `root`; `up()` builds them, `down()` removes every trace."""

    root: Path
    count: int
    tag: str = field(default_factory=lambda: f"hc{os.getpid() % 100000}")
    pids: list[int] = field(default_factory=list)
    subnet: str = field(default_factory=lambda: f"10.{200 + os.getpid() % 50}.{os.getpid() % 250}")

    @property
    def bridge(self) -> str:
        return f"{self.tag}br"

    def namespace(self, i: int) -> str:
        return f"{self.tag}-{i}"

    def veth(self, i: int) -> str:
        """Host i's end of its link in this namespace (the other end is its eth0)."""
        return f"{self.tag}v{i}"

    def address(self, i: int) -> str:
        return f"{self.subnet}.{i + 2}"

    def name(self, i: int) -> str:
        return f"h{i + 1}"

    @property
    def mount(self) -> Path:
        """The path where every host sees its own private directory."""
        return self.root / "mnt"

    def data(self, i: int) -> Path:
        """Host i's private directory as this machine (the controller) sees it."""
        return self.root / "hosts" / self.name(i) / "data"

    @property
    def identity(self) -> Path:
        return self.root / "keys" / "client"

    @property
    def known_hosts(self) -> Path:
        return self.root / "keys" / "known_hosts"

    # -- building ---------------------------------------------------------------------------

    def up(self) -> Testbed:
        try:
            self._up()
        except BaseException:
            self.down()
            raise
        return self

    def _up(self) -> None:
        keys = self.root / "keys"
        keys.mkdir(parents=True, exist_ok=True)
        self.mount.mkdir(exist_ok=True)
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        _keygen(self.identity)
        (keys / "authorized_keys").write_text(Path(f"{self.identity}.pub").read_text())
        self._save()
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.subnet}.1/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        known = []
        for i in range(self.count):
            known.append(self._host(i))
        self.known_hosts.write_text("".join(known))

    def _host(self, i: int) -> str:
        ns, veth = self.namespace(i), self.veth(i)
        folder = self.root / "hosts" / self.name(i)
        self.data(i).mkdir(parents=True, exist_ok=True)
        host_key = folder / "host_key"
        _keygen(host_key)
        config = folder / "sshd_config"
        config.write_text(
            f"ListenAddress {self.address(i)}\nPort 22\nHostKey {host_key}\nPidFile none\n"
            f"AuthorizedKeysFile {self.root / 'keys' / 'authorized_keys'}\n"
            "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
            "MaxSessions 500\nMaxStartups 500\nLogLevel ERROR\nUseDNS no\n"
        )
        _run("ip", "netns", "add", ns)
        _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
        _run("ip", "-n", ns, "addr", "add", f"{self.address(i)}/24", "dev", "eth0")
        _run("ip", "-n", ns, "link", "set", "eth0", "up")
        _run("ip", "-n", ns, "link", "set", "lo", "up")
        _ip("link", "set", veth, "master", self.bridge)
        _ip("link", "set", veth, "up")
        self.pids.append(0)
        self.start_sshd(i)
        key = Path(f"{host_key}.pub").read_text().split()
        return f"{self.address(i)} {key[0]} {key[1]}\n"

    def start_sshd(self, i: int) -> None:
        """Start host i's sshd (again): in a mount namespace of its own where the host's
        directory is at the shared path, and with a home of its own: this machine's ~/.bashrc
        (which bash reads under sshd) is not the host's and would cost every command its
        start-up time."""
        folder = self.root / "hosts" / self.name(i)
        home = folder / "home"
        home.mkdir(exist_ok=True)
        start = 'mount --bind "$1" "$2" && mount --bind "$3" "$HOME" && exec "$4" -D -e -f "$5"'
        argv = ["ip", "netns", "exec", self.namespace(i), "unshare", "--mount"]
        argv += ["--propagation", "private", "sh", "-c", start, "sh", str(self.data(i))]
        argv += [str(self.mount), str(home), SSHD, str(folder / "sshd_config")]
        log = open(folder / "sshd.log", "ab")  # noqa: SIM115 - the child keeps it
        proc = subprocess.Popen(argv, stdout=log, stderr=log, start_new_session=True)
        log.close()
        self.pids[i] = proc.pid
        self._save()
        _wait_port(self.address(i), 22)

    def stop_sshd(self, i: int) -> None:
        """Host i goes away: its sshd and every session it holds are killed."""
        if self.pids[i]:
            _kill_tree(self.pids[i])
            self.pids[i] = 0
            self._save()

    def _save(self) -> None:
        (self.root / "testbed.json").write_text(json.dumps(asdict(self), default=str))

    @classmethod
    def load(cls, root: Path) -> Testbed:
        data = json.loads((root / "testbed.json").read_text())
        return cls(Path(data["root"]), data["count"], data["tag"], data["pids"], data["subnet"])

    # -- what a project needs -----------------------------------------------------------------

    def hosts_yaml(self, groups: dict[str, list[int]] | None = None) -> str:
        """The `ssh` and `hosts` sections of a project over these hosts."""
        groups = groups or {"all": list(range(self.count))}
        lines = ["ssh:", f"  identity: {self.identity}", f"  known_hosts: {self.known_hosts}"]
        lines.append("hosts:")
        for group, members in groups.items():
            lines.append(f"  {group}:")
            lines += [
                f"    - {{name: {self.name(i)}, address: {self.address(i)}}}" for i in members
            ]
        return "\n".join(lines) + "\n"

    def read_only(self, i: int, on: bool = True) -> None:
        """Make host i's directory refuse writes (a host that fails to apply), or undo it."""
        mode = "ro" if on else "rw"
        _run("nsenter", "-t", str(self._sshd(i)), "-m", "mount", "-o", f"remount,bind,{mode}",
             str(self.mount))  # fmt: skip

    def _sshd(self, i: int) -> int:
        """The sshd's pid (the `sh` we started exec'd it, so it is the same process)."""
        return self.pids[i]

    def sysctl(self, i: int, key: str) -> str:
        """A net.* sysctl as host i sees it."""
        out = _run("ip", "netns", "exec", self.namespace(i), "sysctl", "-n", key)
        return out.strip()

    def set_sysctl(self, i: int, key: str, value: str) -> None:
        _run("ip", "netns", "exec", self.namespace(i), "sysctl", "-q", "-w", f"{key}={value}")

    # -- removing ---------------------------------------------------------------------------

    def down(self) -> None:
        """Stop every host and remove its namespace, link and bridge. Processes still in a
        namespace (a workload a test left running) are killed first, and each veth is deleted
        from this side: a namespace lives on while anything runs in it, and so does its
        veth, whose name the next bed of this process would take."""
        for pid in self.pids:
            if pid:
                _kill_tree(pid)
        for i in range(self.count):
            left = subprocess.run(
                ["ip", "netns", "pids", self.namespace(i)], capture_output=True, text=True
            )
            for pid in left.stdout.split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
            subprocess.run(["ip", "link", "del", self.veth(i)], capture_output=True)
            subprocess.run(["ip", "netns", "del", self.namespace(i)], capture_output=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)
        self.pids = []


def _keygen(path: Path) -> None:
    if not path.exists():
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "hone-testbed", "-f", str(path))


def _ip(*args: str) -> None:
    _run("ip", *args)


def _run(*argv: str) -> str:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip()}")
    return done.stdout


def _wait_port(address: str, port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((address, port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"sshd on {address} did not start") from None
            time.sleep(0.05)


def _kill_tree(pid: int) -> None:
    """The sshd and every session it forked (their parent chain leads to it)."""
    victims = [pid, *_descendants(pid)]
    for victim in victims:
        with contextlib.suppress(ProcessLookupError):
            os.kill(victim, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def _descendants(pid: int) -> list[int]:
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    found, queue = [], [pid]
    while queue:
        children = parents.get(queue.pop(), [])
        found += children
        queue += children
    return found


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "up":
        bed = Testbed(Path(argv[2]).resolve(), int(argv[1])).up()
        print(bed.hosts_yaml(), end="")
        return 0
    if len(argv) == 2 and argv[0] == "down":
        Testbed.load(Path(argv[1]).resolve()).down()
        return 0
    print("usage: python -m benchmarks.cluster.netns up COUNT DIR | down DIR", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
