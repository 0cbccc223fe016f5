"""Sampling overhead: a CPU-bound program's run time with and without hone profiling it at 99 Hz.

    python -m benchmarks.diagnose.overhead [--pairs 7] [--rounds 6000] [--hz 99]

The program is hot_tree (tests/diagnose/programs) doing a fixed amount of work (ROUNDS rounds of
200 calls 9 levels deep, some with system calls) and timing itself from its first to its last
round, so perf's start-up and hone's post-processing are not counted: the figure is how much
slower the program itself runs while sampled. It reports its wall time and its CPU time (user +
system, where the kernel's sample handling and stack walks are charged): on a shared machine
the wall time swings with the neighbours' load, the CPU time much less. Runs alternate bare /
profiled, ratios are taken pair by pair, and the median ratio is the figure.
hone profiles it through `hone.diagnose.record.record(command=...)`, exactly as
`hone diagnose -- PROGRAM` does: perf record -F 99 -g (frame pointers), cpu-clock here.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
from pathlib import Path

from benchmarks.diagnose.inputs import build
from hone.diagnose.record import record


def times(report: Path) -> tuple[float, float]:
    wall, cpu = report.read_text().split()
    return float(wall), float(cpu)


def bare(binary: Path, rounds: int, report: Path) -> tuple[float, float]:
    subprocess.run([str(binary), "0", str(rounds), str(report)], check=True)
    return times(report)


def profiled(
    binary: Path, rounds: int, report: Path, hz: int, folder: Path
) -> tuple[tuple[float, float], int]:
    recording = record(
        command=[str(binary), "0", str(rounds), str(report)],
        frequency_hz=hz,
        output_dir=folder,
        quiet_command=True,
    )
    return times(report), recording.profile().total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=6000)
    parser.add_argument("--hz", type=int, default=99)
    args = parser.parse_args()
    binary = build("hot_tree")
    folder = Path(tempfile.mkdtemp(prefix="hone-bench-overhead-"))
    report = folder / "elapsed.txt"
    bare(binary, args.rounds // 4, report)  # warm-up
    runs: dict[str, list[tuple[float, float]]] = {"bare": [], "profiled by hone": []}
    samples = []
    for _ in range(args.pairs):
        runs["bare"].append(bare(binary, args.rounds, report))
        measured, count = profiled(binary, args.rounds, report, args.hz, folder)
        runs["profiled by hone"].append(measured)
        samples.append(count)
    print(
        f"hot_tree, {args.rounds} rounds, {args.pairs} pairs, sampling at {args.hz} Hz "
        f"(median {statistics.median(samples):.0f} samples per profiled run)"
    )
    print("| run | wall, median (min-max) | CPU, median (min-max) |")
    print("|---|---|---|")
    for name, measured in runs.items():
        cells = []
        for index in (0, 1):
            values = [m[index] for m in measured]
            cells.append(f"{statistics.median(values):.3f} s ({min(values):.3f}-{max(values):.3f})")
        print(f"| {name} | {cells[0]} | {cells[1]} |")
    for index, label in ((0, "wall"), (1, "CPU")):
        ratios = [
            p[index] / b[index] for p, b in zip(runs["profiled by hone"], runs["bare"], strict=True)
        ]
        print(
            f"overhead, {label} time (median of pair ratios - 1): "
            f"{100 * (statistics.median(ratios) - 1):+.2f} % "
            f"(pairs {100 * (min(ratios) - 1):+.2f} % to {100 * (max(ratios) - 1):+.2f} %)"
        )


if __name__ == "__main__":
    main()
