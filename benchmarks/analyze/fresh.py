"""`hone analyze` on fresh instances of the real workloads it was trained on: does it name the
right class on this machine?

    python -m benchmarks.analyze.fresh [--seconds 45] [--rounds 1] [WORKLOAD ...]

Each workload is started anew (new server, new data folder, new port), analysed with hone's
default model for --seconds, and stopped. The training runs are earlier runs of the same
workloads; the machine is shared, so other people's work is in every sample, as in training."""

from __future__ import annotations

import argparse

from benchmarks.analyze.workloads import WORKLOADS, running
from hone.analyze import analyze, default_model
from hone.analyze.features import WINDOW_SECONDS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="*", default=list(WORKLOADS))
    parser.add_argument("--seconds", type=float, default=WINDOW_SECONDS)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    model = default_model()
    right = total = 0
    print("| workload | expected | named (confidence) | bottleneck |")
    print("|---|---|---|---|")
    for _ in range(args.rounds):
        for name in args.workloads:
            with running(name) as workload:
                result = analyze(args.seconds, model=model)
            total += 1
            right += result.cls == workload.cls
            mark = "" if result.cls == workload.cls else " **wrong**"
            bottleneck = result.bottleneck.name if result.bottleneck else "none"
            print(f"| {name} | {workload.cls} | {result.cls} ({result.confidence:.0%}){mark} "
                  f"| {bottleneck} |", flush=True)  # fmt: skip
    print(f"\n{right}/{total} named right")


if __name__ == "__main__":
    main()
