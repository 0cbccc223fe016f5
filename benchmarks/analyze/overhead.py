"""Collector overhead: CPU time of `hone collect` at a 1 s interval against A-Tune's way of
sampling (spawning the sysstat tools and perf every interval and reading their text), both
running side by side for the same wall time.

    python -m benchmarks.analyze.overhead [--seconds 300]

Each sampler is a child process; its CPU time (user + system, its own and that of every process
it spawned) comes from wait4 when it ends, and is shown as percent of one core over the run.
The A-Tune-style sampler runs, every second and in parallel as A-Tune's collector does, the
commands behind its metric groups: mpstat (CPU.STAT), iostat -x (STORAGE.STAT), sar -n DEV
(NET.STAT), sar -n EDEV (NET.ESTAT), vmstat (MEM.VMSTAT), sar -w (SYS.TASKS), sar -q
(SYS.LDAVG), and perf stat system-wide (PERF.STAT; software events here, as this machine has
no hardware counters)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

INTERVAL = 1
ATUNE_COMMANDS = (
    ["mpstat", "-P", "ALL", str(INTERVAL), "1"],
    ["iostat", "-xmt", str(INTERVAL), "2"],
    ["sar", "-n", "DEV", str(INTERVAL), "1"],
    ["sar", "-n", "EDEV", str(INTERVAL), "1"],
    ["vmstat", str(INTERVAL), "2"],
    ["sar", "-w", str(INTERVAL), "1"],
    ["sar", "-q", str(INTERVAL), "1"],
    ["perf", "stat", "-a", "-x", ",", "-e", "task-clock,context-switches,page-faults",
     "sleep", str(INTERVAL)],
)  # fmt: skip


def atune_sampler(seconds: float) -> None:
    """Every interval: start every tool at once, wait for all, keep their text (as A-Tune does,
    which then parses it)."""
    env = {**os.environ, "LC_ALL": "C"}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        procs = [
            subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            for cmd in ATUNE_COMMANDS
        ]
        for proc in procs:
            out, err = proc.communicate()
            (out + err).decode().splitlines()


def measure(seconds: int) -> dict[str, float]:
    """Run the samplers side by side; CPU percent of one core for each."""
    with tempfile.TemporaryDirectory() as tmp:
        hone = [sys.executable, "-m", "hone", "collect", "-i", str(INTERVAL), "-d", str(seconds)]
        commands = {
            "hone collect (CSV, per-process scan)": [*hone, "-o", f"{tmp}/a.csv"],
            "hone collect --no-processes (CSV)": [*hone, "--no-processes", "-o", f"{tmp}/b.csv"],
            "A-Tune style (8 tools spawned per sample)": [
                sys.executable, "-m", "benchmarks.analyze.overhead", "--atune-sampler",
                str(seconds),
            ],
        }  # fmt: skip
        started = time.monotonic()
        procs = {
            name: subprocess.Popen(cmd, stdout=subprocess.DEVNULL) for name, cmd in commands.items()
        }
        results = {}
        for name, proc in procs.items():
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode != 0:
                raise SystemExit(f"{name} failed with exit code {proc.returncode}")
            results[name] = (usage.ru_utime + usage.ru_stime) / seconds * 100
        results["wall seconds"] = time.monotonic() - started
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=300)
    parser.add_argument("--atune-sampler", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.atune_sampler is not None:
        atune_sampler(args.atune_sampler)
        return
    results = measure(args.seconds)
    wall = results.pop("wall seconds")
    print(f"\n{args.seconds} s at a {INTERVAL} s interval, side by side (wall {wall:.0f} s)")
    print("| sampler | CPU, % of one core |")
    print("|---|---|")
    for name, percent in results.items():
        print(f"| {name} | {percent:.2f} |")
    hone = results["hone collect (CSV, per-process scan)"]
    atune = results["A-Tune style (8 tools spawned per sample)"]
    print(f"\nA-Tune style / hone: {atune / hone:.1f}x")


if __name__ == "__main__":
    main()
