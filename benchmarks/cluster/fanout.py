"""Fan-out of a cluster project: apply + verify + journal of 10 knobs on 2, 8 and 24 hosts
(network namespaces, an sshd in each, real OpenSSH), the time each extra host adds (target
under 50 ms), and the roll-back of every host when one host fails, with nothing left changed.

    python -m benchmarks.cluster.fanout [--hosts 2 8 24] [--repeats 5]

The 10 knobs per host: two per-namespace sysctls (net.core.somaxconn, net.ipv4.tcp_fin_timeout)
and eight keys of two config files in the host's own directory. `first` is the first change of
a run: read every knob on every host, journal them with fsync (one journal per host), set, read
back. `trial` is a later change of all 10 knobs (read, write, read back). Connecting (the ssh
handshake, once per host per run and shared by later runs for 60 s) is shown apart."""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.cluster.netns import Testbed, available

KEYS = [f"k{i}" for i in range(4)]


def project(bed: Testbed, folder: Path) -> Path:
    lines = [f"name: fanout{bed.count}", bed.hosts_yaml({"all": list(range(bed.count))}), "knobs:"]
    lines.append(
        "  somaxconn: {type: int, range: [128, 8192], sysctl: net.core.somaxconn, group: all}"
    )
    lines.append(
        "  fin: {type: int, range: [5, 120], sysctl: net.ipv4.tcp_fin_timeout, group: all}"
    )
    for conf in ("a", "b"):
        for key in KEYS:
            lines.append(
                f"  {conf}_{key}: {{type: int, range: [1, 1000], config: {{file: "
                f"{bed.mount / (conf + '.conf')}, key: {key}}}, group: all}}"
            )
    lines += [
        "benchmark: 'echo score: 1'",
        "metrics:",
        "  score: {pattern: 'score: (\\d+)', direction: maximize}",
    ]
    path = folder / "hone.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def values(n: int) -> dict[str, str]:
    result = {"somaxconn": str(1000 + n), "fin": str(30 + n)}
    result.update({f"{c}_{k}": str(10 * n + i) for c in "ab" for i, k in enumerate(KEYS)})
    return result


def state(bed: Testbed) -> list[tuple[str, str, str, str]]:
    return [
        (
            bed.sysctl(i, "net.core.somaxconn"),
            bed.sysctl(i, "net.ipv4.tcp_fin_timeout"),
            (bed.data(i) / "a.conf").read_text(),
            (bed.data(i) / "b.conf").read_text(),
        )
        for i in range(bed.count)
    ]


def measure(count: int, repeats: int) -> dict[str, float]:
    from hone.cluster.project import cluster_of
    from hone.cluster.restore import restore_project
    from hone.errors import ActuationError
    from hone.project import load_project

    work = Path(tempfile.mkdtemp(prefix="hone-fanout-"))
    bed = Testbed(work / "bed", count).up()
    try:
        for i in range(count):
            for conf in ("a", "b"):
                (bed.data(i) / f"{conf}.conf").write_text("".join(f"{k} = 1\n" for k in KEYS))
        loaded = load_project(project(bed, work))
        firsts, trials, connects, rollbacks = [], [], [], []
        for r in range(repeats):
            os.environ["HONE_HOME"] = str(work / f"home{r}")  # fresh journals, no live masters
            cluster = cluster_of(loaded)
            assert cluster is not None
            started = time.perf_counter()
            for host in cluster.hosts.values():
                host.connect()
            connects.append(time.perf_counter() - started)
            started = time.perf_counter()
            cluster.prepare()
            cluster.apply(values(1))
            firsts.append(time.perf_counter() - started)
            started = time.perf_counter()
            cluster.apply(values(2))
            trials.append(time.perf_counter() - started)
            before = state(bed)
            bed.read_only(count - 1)
            started = time.perf_counter()
            try:
                cluster.apply(values(3))
                raise AssertionError("the read-only host did not fail")
            except ActuationError:
                rollbacks.append(time.perf_counter() - started)
            finally:
                bed.read_only(count - 1, False)
            if state(bed) != before:
                raise AssertionError("the roll-back left a host changed")
            outcomes = restore_project(loaded.name)
            assert all(o.outcome.ok for o in outcomes)
            for host in cluster.hosts.values():
                host.stop_master()
        return {
            "hosts": count,
            "connect": statistics.median(connects),
            "first": statistics.median(firsts),
            "trial": statistics.median(trials),
            "rollback": statistics.median(rollbacks),
        }
    finally:
        bed.down()
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[2, 8, 24])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    why = available()
    if why:
        sys.exit(f"no namespace test bed: {why}")
    rows = [measure(n, args.repeats) for n in args.hosts]
    print(
        "| hosts | connect (s) | first change: read + journal + set + verify (ms) "
        "| later trial (ms) | roll-back after one host fails (ms) |"
    )
    print("|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['hosts']} | {row['connect']:.2f} | {row['first'] * 1000:.0f} "
            f"| {row['trial'] * 1000:.0f} | {row['rollback'] * 1000:.0f} |"
        )
    low, high = rows[0], rows[-1]
    span = high["hosts"] - low["hosts"]
    if span:
        for what in ("first", "trial", "rollback"):
            per = (high[what] - low[what]) / span * 1000
            print(f"per extra host, {what}: {per:.1f} ms")
    print("after every roll-back every host read back exactly as before (sysctls and files)")


if __name__ == "__main__":
    main()
