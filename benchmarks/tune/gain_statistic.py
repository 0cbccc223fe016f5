"""The confirmation's gain statistic on simulated rounds: coverage of its interval and how often
a candidate that gains nothing is confirmed, for the mean of log ratios hone uses
(`hone.tune.stats.paired_gain`) and the mean of per-round ratios (c - b) / |b| it replaced.

Readings have multiplicative log-normal noise of mean 1 (every reading its own draw, seeded), so
the candidate's true gain g is both the ratio of the means and of the medians. Each simulated
study has 3 baseline readings, then interleaved rounds; the baseline's noise over the study is
pooled into each interval as hone does.

    python -m benchmarks.tune.gain_statistic [--studies 2000] [--seed 1] [--minimise] [--power]

Columns: coverage of the 95 % interval after 3 and after 10 rounds (the true gain inside it),
and the false confirmations at a true gain of 0: the share of studies whose 95 % interval after
3 rounds lies above zero (2.5 % is what a 95 % interval promises), and the share that hone's
sequential plan (3 planned rounds, up to 10 when close, confirm.Plan's levels) confirms.

`--power`: how often the look at 3 and at 10 rounds (at its level in confirm.Plan(3, 10))
confirms a true gain equal to the detectable gain the quality line prints (meant: 4 times in
5), computed on the log scale as hone does, and with a CV taken as a spread in points of a
linear gain (the formula before the log scale)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence

import numpy as np

from hone.tune.confirm import Plan, detectable
from hone.tune.stats import Gain, half_width, noise, paired_gain

CVS = (1.0, 5.0, 20.0, 50.0, 120.0)
GAINS = (0.0, 3.0, 10.0)
BASELINE_RUNS = 3
PLANNED, MOST = 3, 10

Statistic = Callable[[list[float], list[float], float, tuple[float, int]], Gain]


def mean_of_ratios(
    candidate: Sequence[float], baseline: Sequence[float], level: float, spread: tuple[float, int]
) -> Gain:
    """The statistic hone used before: the mean of (c - b) / |b| in %, its t-interval widened
    by pooling with the baseline's CV scaled by the candidate's mean ratio."""
    pairs = list(zip(candidate, baseline, strict=True))
    diffs = np.array([(c - b) / abs(b) * 100.0 for c, b in pairs])
    cv, cv_df = spread
    scale = float(np.mean([abs(c / b) for c, b in pairs]))
    half = half_width(diffs, level, (2.0 * (cv * scale) ** 2, cv_df))
    mean = float(diffs.mean())
    return Gain(mean, mean - half, mean + half, len(diffs), level)


def log_ratios(
    candidate: Sequence[float], baseline: Sequence[float], level: float, spread: tuple[float, int]
) -> Gain:
    return paired_gain(candidate, baseline, True, level, spread)


class Study:
    """One simulated study: baseline readings, then pairs of readings drawn round by round."""

    def __init__(self, rng: np.random.Generator, cv: float, gain: float, sign: float) -> None:
        sigma = math.sqrt(math.log1p((cv / 100.0) ** 2))
        draws = rng.lognormal(-sigma * sigma / 2, sigma, size=BASELINE_RUNS + 2 * MOST)
        # a minimised metric (sign -1) is better when smaller: the candidate's value is the
        # baseline's times 1 - g, so that the gain (its reduction) is g
        factor = 1 + gain / 100.0 if sign > 0 else 1 - gain / 100.0
        self.phase = list(sign * 100.0 * draws[:BASELINE_RUNS])
        self.base = list(sign * 100.0 * draws[BASELINE_RUNS::2])
        self.cand = list(sign * 100.0 * factor * draws[BASELINE_RUNS + 1 :: 2])

    def look(self, statistic: Statistic, rounds: int, level: float) -> Gain:
        base = self.phase + self.base[:rounds]
        spread = (noise([abs(x) for x in base]), len(base) - 1)
        return statistic(self.cand[:rounds], self.base[:rounds], level, spread)

    def sequential(self, statistic: Statistic) -> bool:
        """Whether hone's plan confirms the candidate (runner._confirm with one candidate)."""
        plan = Plan(PLANNED, MOST)
        for rounds in range(2, MOST + 1):
            level = plan.level(rounds)
            if level is None:
                continue
            gain = self.look(statistic, rounds, level)
            if gain.significant:
                return True
            if gain.worse or (rounds >= PLANNED and gain.mean <= 0):
                return False
        return False


def power(studies: int, seed: int) -> None:
    plan = Plan(PLANNED, MOST)
    print(f"{'CV %':>5} {'rounds':>6}  {'formula':<7} {'detectable %':>12} {'confirmed':>9}")
    for cv in (5.0, 20.0, 50.0):
        for rounds in (PLANNED, MOST):
            for name, relative in (("log", True), ("linear", False)):
                gain = detectable(cv, rounds, plan, relative)
                rng = np.random.default_rng([seed, int(cv * 10), rounds])
                sample = [Study(rng, cv, gain, 1.0) for _ in range(studies)]
                level = plan.level(rounds) or 95.0
                hits = sum(s.look(log_ratios, rounds, level).significant for s in sample)
                share = 100.0 * hits / studies
                print(f"{cv:>5g} {rounds:>6}  {name:<7} {gain:>12.1f} {share:>8.1f}%", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--minimise", action="store_true", help="a smaller-is-better metric")
    parser.add_argument("--power", action="store_true", help="the detectable gain's power")
    args = parser.parse_args()
    if args.power:
        power(args.studies, args.seed)
        return
    sign = -1.0 if args.minimise else 1.0
    statistics = {"log ratios": log_ratios, "mean of ratios": mean_of_ratios}
    print(
        f"{'CV %':>5} {'gain %':>6}  {'statistic':<14} {'cover 3':>7} {'cover 10':>8} "
        f"{'median est. 10':>14} {'false 3':>7} {'false seq.':>10}"
    )
    for cv in CVS:
        for gain in GAINS:
            rng = np.random.default_rng([args.seed, int(cv * 10), int(gain * 10)])
            studies = [Study(rng, cv, gain, sign) for _ in range(args.studies)]
            for name, statistic in statistics.items():
                cover = {n: 0 for n in (PLANNED, MOST)}
                false_fixed = false_seq = 0
                estimates = []
                for study in studies:
                    for n in cover:
                        look = study.look(statistic, n, 95.0)
                        cover[n] += look.low <= gain <= look.high
                        if n == PLANNED:
                            false_fixed += look.significant
                        else:
                            estimates.append(look.mean)
                    if gain == 0:
                        false_seq += study.sequential(statistic)
                share = {n: 100.0 * c / args.studies for n, c in cover.items()}
                false = (
                    f"{100.0 * false_fixed / args.studies:>6.1f}% "
                    f"{100.0 * false_seq / args.studies:>9.1f}%"
                    if gain == 0
                    else f"{'':>7} {'':>10}"
                )
                print(
                    f"{cv:>5g} {gain:>6g}  {name:<14} {share[PLANNED]:>6.1f}% "
                    f"{share[MOST]:>7.1f}% {float(np.median(estimates)):>+13.1f}% {false}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
