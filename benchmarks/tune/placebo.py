"""False winners: how often hone applies a knob that does nothing. A placebo knob (a key of a
file nothing reads, three values) on a benchmark whose readings vary by 5 % (seeded Gaussian
noise: every study sees its own sequence), tuned end to end with the default confirmation
(3 planned rounds, up to 10 when close). Target (issue 22): no winner in >= 19 of 20 studies.

    python -m benchmarks.tune.placebo [--studies 20] [--cv 5] [--first-seed 100]

Prints one line per study (outcome, gain, rounds, readings) and the totals."""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import textwrap
from pathlib import Path

BENCH = """\
import os, random
# readings that vary by PLACEBO_CV %: one sequence per seed, so a study can be repeated exactly
rng = random.Random(int(os.environ["PLACEBO_SEED"]) * 1000 + int(os.environ["ITERATION"]))
cv = float(os.environ.get("PLACEBO_CV", "5"))
print(f"ops: {1000 * rng.gauss(1, cv / 100):.2f}")
"""


def write_project(folder: Path, bench: str = BENCH, **tuning: object) -> Path:
    """A project with one placebo knob; `tuning` adds keys to its tuning section."""
    (folder / "bench.py").write_text(bench)
    (folder / "placebo.conf").write_text("placebo = one\n")
    settings = {"engine": "random", "seed": 0, "budget": 4, **tuning}
    project = folder / "hone.yaml"
    project.write_text(
        textwrap.dedent("""\
        name: placebo
        knobs:
          placebo:                       # a setting nothing reads
            type: categorical
            values: [one, two, three]
            config: {file: placebo.conf, key: placebo, restart: false}
        benchmark: python3 bench.py
        metrics:
          ops: {pattern: 'ops: (\\S+)', direction: maximize}
        """)
        + "tuning: {"
        + ", ".join(f"{k}: {v}" for k, v in settings.items())
        + "}\n"
    )
    return project


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=20)
    parser.add_argument("--cv", type=float, default=5.0)
    parser.add_argument("--first-seed", type=int, default=100)
    args = parser.parse_args()
    os.environ["PLACEBO_CV"] = str(args.cv)
    winners, rounds, readings = 0, [], []
    for index in range(args.studies):
        seed = args.first_seed + index
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            os.environ["HONE_HOME"] = str(folder / "state")
            os.environ["PLACEBO_SEED"] = str(seed)
            from hone.project import load_project
            from hone.tune.console import Reporter
            from hone.tune.records import TuneOptions
            from hone.tune.runner import Tuner

            project = load_project(write_project(folder, confirm="{candidates: 2, rounds: 3}"))
            result = Tuner(project, Reporter(), TuneOptions()).run()
        winners += result.outcome == "applied"
        rounds.append(result.confirm_rounds)
        readings.append(result.trials)
        print(
            f"seed {seed}: {result.outcome:8} gain {result.gain}, "
            f"{result.confirm_rounds} rounds, {result.trials} readings",
            flush=True,
        )
    print(
        f"placebo at CV {args.cv:g} %: a winner applied in {winners} of {args.studies} studies; "
        f"confirmation rounds median {statistics.median(rounds):g} (max {max(rounds)}), "
        f"readings per study median {statistics.median(readings):g}"
    )


if __name__ == "__main__":
    main()
