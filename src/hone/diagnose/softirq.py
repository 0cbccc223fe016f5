"""Network receive work piled on one CPU: the evidence for RPS and RFS.

A device with one receive queue (many virtual NICs, a veth, lo) runs its NET_RX softirq on one
CPU: the CPU its interrupt lands on, or for a veth or lo the CPU of the sender. When that CPU is
busy with it while another CPU has time to spare, Receive Packet Steering (`rps_cpus` of the
queue) moves the protocol work to other CPUs, and Receive Flow Steering (`rps_sock_flow_entries`,
`rps_flow_cnt`) sends each flow to the CPU where its reader runs. When the work is spread already,
or no other CPU is idle, RPS has nothing to gain, and hone suggests neither.

Everything comes from a few /proc files, read at the start of the window and every half second
(cheap, and no perf needed): the softirq time of each CPU (/proc/stat) plus the CPU time of that
CPU's `ksoftirqd` thread (with IRQ time accounting the kernel charges softirqs run by ksoftirqd to
the thread, not to the softirq column), each CPU's idle time, the NET_RX counts of
/proc/softirqs, and the received packets of each device of the process's network namespace
(/proc/PID/net/dev), the busiest of which is the device to steer."""

from __future__ import annotations

import os
import re
import time
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path

#: NET_RX softirqs on one CPU, as a share of all of them, from which the work counts as piled up.
CONCENTRATION = 0.7
#: Softirq time of that CPU (share of the window) below which there is too little to move.
MIN_SOFTIRQ = 0.10
#: Idle share of another CPU from which it can take the work.
MIN_IDLE = 0.10
#: NET_RX softirqs per second below which the receive path is not a load at all.
MIN_RATE = 100.0
TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Snapshot:
    """The counters at one moment."""

    at: float
    #: per CPU: (softirq ticks, idle ticks, total ticks)
    cpus: dict[int, tuple[int, int, int]]
    net_rx: dict[int, int]
    #: per CPU: CPU ticks of its ksoftirqd thread
    ksoftirqd: dict[int, int]
    #: per device of the process's namespace: packets received
    rx_packets: dict[str, int]


@dataclass
class CpuShare:
    cpu: int
    softirq: float  # share of the window spent in softirqs (ksoftirqd included)
    idle: float  # share of the window idle (iowait included)
    net_rx: float  # share of all NET_RX softirqs of the window


@dataclass
class Softirq:
    """What the window showed, and whether it points to RPS/RFS (`verdict`, in words)."""

    window_s: float
    cpus: list[CpuShare] = field(default_factory=list)
    net_rx_per_s: float = 0.0
    device: str = ""
    rx_packets_per_s: float = 0.0
    #: the CPU the NET_RX work piled on, when the rule fired
    busy_cpu: int | None = None
    #: the measurement in words: why RPS fits, or why not
    verdict: str = ""

    @property
    def concentrated(self) -> bool:
        return self.busy_cpu is not None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Softirq:
        cpus = [CpuShare(**c) for c in data.get("cpus", [])]
        return cls(**{**data, "cpus": cpus})


def snapshot(pid: int | None = None) -> Snapshot:
    """The counters now; devices of `pid`'s network namespace (else hone's own)."""
    return Snapshot(
        at=time.monotonic(),
        cpus=_proc_stat(),
        net_rx=_net_rx(),
        ksoftirqd=_ksoftirqd(),
        rx_packets=_rx_packets(pid),
    )


class Watch:
    """Snapshots over the window; the last one taken while the process's devices could still be
    read counts as the end (a diagnosed command may exit just before the window does)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.first = snapshot(pid)
        self.last = self.first

    def sample(self) -> None:
        now = snapshot(self.pid)
        if now.rx_packets or not self.first.rx_packets:
            self.last = now

    def result(self) -> Softirq:
        return measure(self.first, self.last)


def measure(before: Snapshot, after: Snapshot) -> Softirq:
    """The window between two snapshots, and the rule: NET_RX piled on one CPU that spends a
    tenth or more of its time in softirqs, while another CPU is idle a tenth or more."""
    window = max(after.at - before.at, 1e-6)
    total_rx = sum(after.net_rx.get(c, 0) - n for c, n in before.net_rx.items())
    shares = []
    for cpu, (soft0, idle0, all0) in sorted(before.cpus.items()):
        soft1, idle1, all1 = after.cpus.get(cpu, (soft0, idle0, all0))
        ticks = max(all1 - all0, 1)
        ksoft = after.ksoftirqd.get(cpu, 0) - before.ksoftirqd.get(cpu, 0)
        rx = after.net_rx.get(cpu, 0) - before.net_rx.get(cpu, 0)
        shares.append(
            CpuShare(
                cpu=cpu,
                softirq=round(min(1.0, (soft1 - soft0 + ksoft) / ticks), 4),
                idle=round((idle1 - idle0) / ticks, 4),
                net_rx=round(rx / total_rx, 4) if total_rx > 0 else 0.0,
            )
        )
    deltas = {d: n - before.rx_packets.get(d, n) for d, n in after.rx_packets.items()}
    device = max(deltas, key=lambda d: deltas[d], default="")
    result = Softirq(
        window_s=round(window, 3),
        cpus=shares,
        net_rx_per_s=round(total_rx / window, 1),
        device=device if device and deltas[device] > 0 else "",
        rx_packets_per_s=round(deltas[device] / window, 1) if device else 0.0,
    )
    _decide(result)
    return result


def _decide(s: Softirq) -> None:
    if len(s.cpus) < 2:
        s.verdict = "one CPU: there is no other CPU to steer receive work to"
        return
    if s.net_rx_per_s < MIN_RATE:
        s.verdict = f"little network receive work ({s.net_rx_per_s:.0f} NET_RX softirqs/s)"
        return
    top = max(s.cpus, key=lambda c: c.net_rx)
    others = [c for c in s.cpus if c.cpu != top.cpu]
    spare = max(others, key=lambda c: c.idle)
    where = (
        f"NET_RX softirq: {top.net_rx:.0%} on CPU{top.cpu} (softirqs took {top.softirq:.0%} "
        f"of it), CPU{spare.cpu} {spare.idle:.0%} idle"
    )
    if s.device:
        where += f"; {s.device} received {s.rx_packets_per_s:,.0f} packets/s"
    if top.net_rx < CONCENTRATION:
        s.verdict = f"{where}: spread over the CPUs already"
    elif top.softirq < MIN_SOFTIRQ:
        s.verdict = f"{where}: too little softirq time on CPU{top.cpu} to move"
    elif spare.idle < MIN_IDLE:
        s.verdict = f"{where}: no other CPU idle enough to take the work"
    elif not s.device:
        s.verdict = f"{where}; no device of the process received packets"
    else:
        s.verdict = where
        s.busy_cpu = top.cpu


def _proc_stat() -> dict[int, tuple[int, int, int]]:
    cpus = {}
    for line in Path("/proc/stat").read_text().splitlines():
        match = re.match(r"cpu(\d+)\s+(.*)", line)
        if match:
            ticks = [int(x) for x in match[2].split()]
            # user nice system idle iowait irq softirq steal (guest time is inside user)
            cpus[int(match[1])] = (ticks[6], ticks[3] + ticks[4], sum(ticks[:8]))
    return cpus


def _net_rx() -> dict[int, int]:
    lines = Path("/proc/softirqs").read_text().splitlines()
    header = [int(name[3:]) for name in lines[0].split()]
    for line in lines[1:]:
        name, _, counts = line.partition(":")
        if name.strip() == "NET_RX":
            return dict(zip(header, (int(x) for x in counts.split()), strict=False))
    return {}


def _ksoftirqd() -> dict[int, int]:
    """CPU ticks (utime + stime) of each CPU's ksoftirqd thread."""
    found = {}
    for cpu, stat in _ksoftirqd_threads().items():
        try:
            fields = stat.read_text(errors="replace").rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        found[cpu] = int(fields[11]) + int(fields[12])
    return found


@cache
def _ksoftirqd_threads() -> dict[int, Path]:
    """Each CPU's ksoftirqd (kernel threads that live as long as the machine): found once."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            match = re.match(r"\d+ \(ksoftirqd/(\d+)\)", stat.read_text(errors="replace"))
        except OSError:
            continue
        if match:
            found[int(match[1])] = stat
    return found


def _rx_packets(pid: int | None) -> dict[str, int]:
    path = Path(f"/proc/{pid}/net/dev") if pid else Path("/proc/net/dev")
    try:
        lines = path.read_text().splitlines()[2:]
    except OSError:
        return {}
    packets = {}
    for line in lines:
        name, _, numbers = line.partition(":")
        fields = numbers.split()
        if len(fields) > 1:
            packets[name.strip()] = int(fields[1])
    return packets


def cpu_mask(cpus: list[int], like: str) -> str:
    """A CPU mask written as the kernel shows masks: hex, in comma-separated groups of 32 bits,
    as many digits as the file shows now (`like`), so that reading it back compares equal."""
    bits = sum(1 << c for c in cpus)
    digits = max(len(like.replace(",", "")), (bits.bit_length() + 3) // 4, 1)
    text = f"{bits:0{digits}x}"
    groups = [text[max(0, i - 8) : i] for i in range(len(text), 0, -8)][::-1]
    return ",".join(groups) if "," in like else text
