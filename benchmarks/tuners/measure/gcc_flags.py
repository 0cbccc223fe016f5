"""Measure the full grid of the gcc-flags example (examples/gcc-flags) into a tabular tuner task:
benchmarks/tuners/tasks/gcc-flags.yaml + .csv (format: shared/spec/tabular-tasks.md).

    python -m benchmarks.tuners.measure.gcc_flags [--reps 3]

Each repetition walks the whole grid in a new random order, so repeated measurements of a
configuration are taken minutes apart; every row records the 1-minute load average."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import tempfile
from pathlib import Path

from benchmarks.tuners.measure import TASKS, walk_grid

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "gcc-flags"
GRID = {
    "opt": ["-O1", "-O2", "-O3", "-Os"],
    "march": ["x86-64", "x86-64-v2", "x86-64-v3"],
    "unroll": [False, True],
    "lto": [False, True],
    "pgo": [False, True],
}
DEFAULT = {"opt": "-O2", "march": "x86-64", "unroll": False, "lto": False, "pgo": False}


def measure(config: dict, workdir: Path) -> float | None:
    folder = workdir / "example"
    flags = folder / "flags.conf"
    yes = {True: "yes", False: "no"}
    flags.write_text(
        f"OPT={config['opt']}\nMARCH={config['march']}\nUNROLL={yes[config['unroll']]}\n"
        f"LTO={yes[config['lto']]}\nPGO={yes[config['pgo']]}\n"
    )
    result = subprocess.run(
        ["sh", str(folder / "build_and_run.sh")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HONE_WORKDIR": str(workdir)},
    )
    found = re.search(r"seconds: ([0-9.]+)", result.stdout)
    return float(found.group(1)) if result.returncode == 0 and found else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        subprocess.run(["cp", "-r", str(EXAMPLE), str(workdir / "example")], check=True)
        walk_grid(GRID, "gcc-flags", "seconds", args.reps, lambda c: measure(c, workdir))
    knobs = "\n".join(
        f"  {name}: {{type: {'bool' if isinstance(values[0], bool) else 'categorical'}, "
        f"values: {[v if isinstance(v, bool) else str(v) for v in values]}}}".replace("'", '"')
        .replace("False", "false")
        .replace("True", "true")
        for name, values in GRID.items()
    )
    default = ", ".join(
        f"{k}: {str(v).lower() if isinstance(v, bool) else v}" for k, v in DEFAULT.items()
    )
    (TASKS / "gcc-flags.yaml").write_text(
        "# gcc 12 flags of examples/gcc-flags/workload.c, full grid, run time in seconds\n"
        "# (fastest of 3 runs per measurement);\n"
        "# measured by benchmarks/tuners/measure/gcc_flags.py\n"
        f"knobs:\n{knobs}\nobjective: {{metric: seconds, direction: minimize}}\n"
        f"default: {{{default}}}\n"
    )


if __name__ == "__main__":
    main()
