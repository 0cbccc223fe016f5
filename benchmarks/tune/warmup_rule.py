"""How often the warm-up rule (hone.tune.warmup.outlier) flags a first reading: an ordinary
one (false alarms) and one slowed by a transient (detection), for Gaussian noise of a given CV
and the number of other readings the default baseline gives (2) and more.

    python -m benchmarks.tune.warmup_rule [--draws 20000] [--seed 1]

Prints one line per (other readings, CV): false alarms, and detection of a first reading 20 %
and 50 % slow."""

from __future__ import annotations

import argparse
import random

from hone.tune.warmup import outlier

UP = {"ops": "maximize"}


def rate(rng: random.Random, others: int, cv: float, slow: float, draws: int) -> float:
    """The share of draws in which a first reading at (1 - slow) x speed is flagged."""
    flagged = 0
    for _ in range(draws):
        first = {"ops": 100 * rng.gauss(1, cv / 100) * (1 - slow)}
        rest = [{"ops": 100 * rng.gauss(1, cv / 100)} for _ in range(others)]
        flagged += outlier(first, rest, UP) is not None
    return flagged / draws


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print("others  CV %  false alarms  20 % slow  50 % slow")
    for others in (2, 4):
        for cv in (1.0, 2.0, 5.0, 10.0):
            cells = [rate(rng, others, cv, slow, args.draws) for slow in (0.0, 0.2, 0.5)]
            print(f"{others:6d} {cv:5.0f} " + " ".join(f"{100 * c:11.1f} %" for c in cells))


if __name__ == "__main__":
    main()
