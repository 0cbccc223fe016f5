"""Collect labelled training data for `hone analyze` from real workloads on this machine:
src/hone/analyze/data/<class>--<app>-<run>.csv.gz (A-Tune's CSV layout plus hone's extras).

    python -m benchmarks.analyze.collect [--seconds 45] [--runs 2] [WORKLOAD ...]

Each run starts the workload fresh (benchmarks/analyze/workloads.py), samples every second with
hone's collector while it runs, and stops it. Runs of one workload are separate files so that
accuracy can be measured with whole runs held out. An idle run is collected only when the
machine is quiet (others' work would be labelled idle)."""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.analyze.workloads import WORKLOADS, running
from hone.collect import Collector, CsvWriter, sample

DATA = Path(__file__).resolve().parents[2] / "src" / "hone" / "analyze" / "data"


def machine_is_quiet() -> bool:
    """An idle run is only idle if nobody else is working (the machine is shared)."""
    return sample(3.0, processes=False).metrics["CPU.STAT.util"] < 10


def collect(name: str, run: int, seconds: int) -> Path | None:
    if name == "idle" and not machine_is_quiet():
        return None
    with running(name) as workload:
        target = DATA / f"{workload.cls}--{name}-{run}.csv.gz"
        partial = target.with_name("." + target.name)  # readers skip dot files
        with (
            Collector(processes=False) as collector,
            CsvWriter(partial, workload_type=workload.cls, appname=name, extended=True) as writer,
        ):
            for snapshot in collector.stream(1.0, count=seconds):
                writer.write(snapshot)
        partial.replace(target)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="*", default=list(WORKLOADS))
    parser.add_argument("--seconds", type=int, default=45)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--first-run", type=int, default=1)
    args = parser.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    for run in range(args.first_run, args.first_run + args.runs):
        for name in args.workloads:
            path = collect(name, run, args.seconds)
            print(f"{name} run {run}: {path or 'skipped, the machine is not idle'}", flush=True)


if __name__ == "__main__":
    main()
