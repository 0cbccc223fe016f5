"""Run hone's benchmarks: `python -m benchmarks` (each suite also runs on its own)."""

from __future__ import annotations

import subprocess
import sys

SUITES = ["benchmarks.tune.overhead", "benchmarks.optimizers.speed"]


def main() -> None:
    for suite in SUITES:
        print(f"## {suite}", flush=True)
        subprocess.run([sys.executable, "-m", suite], check=True)


if __name__ == "__main__":
    main()
