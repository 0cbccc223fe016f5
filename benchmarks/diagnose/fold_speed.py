"""Folding `perf script` text: hone's folder against inferno-collapse-perf, side by side.

    python -m benchmarks.diagnose.fold_speed [--runs 7] [--seconds 6] [--hz 4999]

The input is a real recording (benchmarks.diagnose.inputs.perf_script_input: hot_tree, a C
program with a wide call tree and system calls, sampled with call stacks), folded by both tools
as whole processes in alternation (A B A B ...); the figure is the median ratio of the pairs.
hone runs as `python -m hone.diagnose.fold FILE` (interpreter start included); its in-process
time is shown too. The outputs must be equal after sorting. FlameGraph's stackcollapse-perf.pl
is on no package registry, so it is not run here; shared/spec/reference-figures.md measured it
at 8-14x inferno's time on a similar input, so the target "3x faster than stackcollapse-perf"
is a hone/inferno ratio of about 3 or less.

The peer is installed on first use with `cargo install inferno` (benchmarks only).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from benchmarks.diagnose.inputs import peer, perf_script_input, timed
from hone.diagnose.fold import fold_perf_script, format_folded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=6.0, help="CPU seconds recorded")
    parser.add_argument("--hz", type=int, default=4999, help="sampling frequency")
    args = parser.parse_args()
    inferno = peer("inferno-collapse-perf")
    source = perf_script_input(args.seconds, args.hz)
    data = source.read_bytes()
    lines = data.count(b"\n")
    out = source.parent
    hone_cmd = [sys.executable, "-m", "hone.diagnose.fold", str(source)]
    peer_cmd = [inferno, str(source)]
    timed(hone_cmd, out / "hone.folded")  # warm-up (page cache, bytecode)
    timed(peer_cmd, out / "inferno.folded")
    hone_times, peer_times = [], []
    for _ in range(args.runs):
        hone_times.append(timed(hone_cmd, out / "hone.folded"))
        peer_times.append(timed(peer_cmd, out / "inferno.folded"))
    ours = (out / "hone.folded").read_text()
    theirs = "".join(sorted((out / "inferno.folded").read_text().splitlines(keepends=True)))
    same = ours == theirs
    in_process = []
    for _ in range(args.runs):
        start = time.perf_counter()
        folded = fold_perf_script(data)
        in_process.append(time.perf_counter() - start)
    assert format_folded(folded) == ours
    ratios = [h / p for h, p in zip(hone_times, peer_times, strict=True)]
    print(
        f"input: {source.name}: {len(data) / 1e6:.1f} MB, {lines:,} lines, "
        f"{len(folded):,} unique stacks"
    )
    print(f"outputs equal after sorting: {same}")
    print("| folder | median | min | max |")
    print("|---|---|---|---|")
    for name, times in (
        ("hone (whole process)", hone_times),
        ("hone (in process)", in_process),
        ("inferno-collapse-perf", peer_times),
    ):
        print(
            f"| {name} | {statistics.median(times):.3f} s | {min(times):.3f} s "
            f"| {max(times):.3f} s |"
        )
    print(
        f"hone / inferno, median of pairs: {statistics.median(ratios):.2f}x "
        f"(min {min(ratios):.2f}x, max {max(ratios):.2f}x)"
    )
    if not same:
        sys.exit("hone's folded output differs from inferno's")


if __name__ == "__main__":
    main()
