"""PromiseTune's own protocol on its systems, beside its published results.

PromiseTune (ICSE 2026) runs each tuner on each system's table noise-free with a budget of 100
measurements (its own tuner starting from 10 random rows) and reports the best configuration
found. Here every tuner of the harness starts cold (no baseline measurements; each its own
initial design) and is scored by the best value it has measured after b evaluations; its
published figures (pools/promisetune-published.yaml) are the median over its 30 runs of the
best of each run's first 100 measurements."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import yaml
from scipy import stats

from benchmarks.tuners.pool import POOLS
from benchmarks.tuners.report import header, overall
from benchmarks.tuners.scoring import evals_to_measure

PUBLISHED = POOLS / "promisetune-published.yaml"
DRIVER = Path(__file__).resolve().parent / "promisetune_driver.py"
SHOWN = ("PromiseTune", "FLASH", "SMAC", "HEBO", "MBO", "GA", "RANDOM")  # of its 11 peers


def best_found(task, result, b: int) -> float:
    """The best value measured in the first b evaluations, in the table's units."""
    gap = result.measured[b - 1] * task.scale()
    return task.optimum() + gap if task.minimize else task.optimum() - gap


def write_promisetune_report(output: Path, tasks, **saved) -> None:
    """The report of a run (the saved run's fields by name, as write_report takes them)."""
    tuners, results, seeds, budget = (saved[k] for k in ("tuners", "results", "seeds", "budget"))
    published = yaml.safe_load(PUBLISHED.read_text())
    theirs = [t for t in SHOWN if t in published["tuners"]]
    what = (
        "Every tuner starts cold on each noise-free table and is scored by the best value it "
        "has measured (PromiseTune's protocol)."
    )
    lines = [
        "# Tuners on PromiseTune's systems, with PromiseTune's protocol",
        "",
        *header(tasks, what, **saved),
        __doc__.split("\n\n", 1)[1].replace("\n", " ").strip(),
        "",
        f"Published figures: `{published['source']}` ({published['protocol']}); P. Chen, "
        'T. Chen, "PromiseTune: Unveiling Causally Promising and Explainable Configuration '
        'Tuning", ICSE 2026, arXiv:2507.05995. javagc is not here: its table is absent from '
        "the stored copies of both repositories. Where a table measures a configuration "
        "several times (PostgreSQL 22 readings each, dconvert, redis, x264), the suite's "
        "truth is their mean, while PromiseTune's lookup (`Code/util/read_file.py`: rows "
        "sorted by the objective, then one dictionary entry per configuration) keeps the "
        "largest reading: its figures there are not on our scale (PostgreSQL's published "
        "medians sit above the table's optimum for every tuner).",
        "",
        f"Median best value found after {budget} evaluations (over {seeds} seeds), and "
        "the published medians (italic); the table's optimum first:",
        "",
        "| system | optimum | "
        + " | ".join(tuners)
        + " | "
        + " | ".join(f"*{t}*" for t in theirs)
        + " |",
        "|---" * (2 + len(tuners) + len(theirs)) + "|",
    ]
    ranks = []
    for task in tasks:
        ours = {
            t: float(np.median([best_found(task, r, budget) for r in results[task.name, t]]))
            for t in tuners
        }
        paper = {t: published["tuners"][t].get(task.name, {}).get("median") for t in theirs}
        cells = [f"{v:.5g}" for v in ours.values()]
        cells += ["-" if v is None else f"*{v:.5g}*" for v in paper.values()]
        lines.append(f"| {task.name} | {task.optimum():.5g} | " + " | ".join(cells) + " |")
        repeats = task.table.rows > len(task.table.configs)  # not on the same scale
        if budget >= 100 and not repeats and all(v is not None for v in paper.values()):
            scores = {**ours, **paper}
            sign = 1 if task.minimize else -1
            order = stats.rankdata([sign * v for v in scores.values()])
            ranks.append(dict(zip(scores, order, strict=True)))
    if ranks:
        lines += [
            "",
            f"Average rank over the {len(ranks)} systems with one reading per configuration "
            "that every shown published tuner has results for, ours at 100 evaluations and the "
            f"published ones together (1 is best; ours over {seeds} seeds, theirs over 30 "
            "runs):",
            "",
            "| tuner | average rank |",
            "|---|---|",
            *[
                f"| {t} | {np.mean([r[t] for r in ranks]):.2f} |"
                for t in sorted(ranks[0], key=lambda t: np.mean([r[t] for r in ranks]))
            ],
        ]
    if "auto" in tuners and "PromiseTune" in published["tuners"]:
        lines += [
            "",
            *against_promisetune(tasks, results, budget, published["tuners"]["PromiseTune"]),
        ]
    lines += ["", *overall(tasks, tuners, results, budget, lambda r: r.measured, evals_to_measure)]
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text("\n".join(lines) + "\n")
    print(f"wrote {output}")


def against_promisetune(tasks, results, budget: int, theirs: dict) -> list[str]:
    """auto's best found per seed against PromiseTune's published runs, system by system: a
    one-sided Mann-Whitney test (unpaired: its runs are not our seeds) of auto being worse."""
    lines = [
        f"auto against PromiseTune's published runs, best found after {budget} evaluations "
        "(auto's seeds against its 30 runs; *worse* when a one-sided Mann-Whitney test says "
        "auto is worse at p < 0.05):",
        "",
        "| system | auto median | PromiseTune median | p (auto worse) | verdict |",
        "|---|---|---|---|---|",
    ]
    not_worse = as_good = counted = 0
    for task in tasks:
        runs = theirs.get(task.name, {}).get("best")
        if not runs:
            continue
        ours = [best_found(task, r, budget) for r in results[task.name, "auto"]]
        sign = 1 if task.minimize else -1  # compare as minimised
        test = stats.mannwhitneyu(
            [sign * v for v in ours], [sign * v for v in runs], alternative="greater"
        )
        ok = sign * np.median(ours) <= sign * np.median(runs)
        worse = test.pvalue < 0.05
        counted += 1
        not_worse += not worse
        as_good += ok
        verdict = "worse" if worse else ("as good or better" if ok else "not significantly worse")
        lines.append(
            f"| {task.name} | {np.median(ours):.5g} | {np.median(runs):.5g} | "
            f"{test.pvalue:.3f} | {verdict} |"
        )
    lines += [
        "",
        f"auto is not significantly worse than PromiseTune on {not_worse} of {counted} systems "
        f"and its median is at least as good on {as_good} (target: at least as good on 10 of "
        "12). The tables that repeat configurations are on different scales (above).",
    ]
    return lines


def run_promisetune(home: Path, python: str, system: str, seed: int) -> list[float]:
    """Every value PromiseTune measures in one run on its own table of `system`, run from its
    checkout `home` by its own interpreter `python` (maximised objectives negated for it, as
    its README asks, and back)."""
    import pandas as pd

    index = yaml.safe_load((POOLS / "pools.yaml").read_text())
    frame = pd.read_csv(home / "Code" / "Data" / f"{system}.csv")
    maximised = not index[system]["minimise"]
    objective = [c for c in frame.columns if c.startswith("$<")][-1]
    if maximised:
        frame[objective] = -frame[objective]
    with tempfile.TemporaryDirectory() as folder:
        table = Path(folder) / f"{system}.csv"
        frame.to_csv(table, index=False)
        out = subprocess.run(
            [python, str(DRIVER), str(home / "Code"), str(table), str(seed)],
            capture_output=True,
            text=True,
            check=True,
        )
    values = json.loads(out.stdout.splitlines()[-1])
    return [-v for v in values] if maximised else values


def main() -> None:
    """python -m benchmarks.tuners.promisetune --systems LLVM,storm --seeds 3: PromiseTune
    itself on its systems, from a checkout named by PROMISETUNE_HOME run by the interpreter
    PROMISETUNE_PYTHON (its requirements installed there); about 6 CPU minutes per run."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    parser.add_argument("--systems", required=True)
    parser.add_argument("--seeds", type=int, default=1)
    args = parser.parse_args()
    home, python = os.environ.get("PROMISETUNE_HOME"), os.environ.get("PROMISETUNE_PYTHON")
    if not home or not python or not (Path(home) / "Code" / "PromiseTune.py").exists():
        sys.exit(
            "PromiseTune is not here: set PROMISETUNE_HOME to a checkout of "
            "ideas-labo/PromiseTune and PROMISETUNE_PYTHON to a Python with its requirements"
        )
    index = yaml.safe_load((POOLS / "pools.yaml").read_text())
    print("| system | seed | best found | measurements | CPU minutes |")
    print("|---|---|---|---|---|")
    for system in args.systems.split(","):
        for seed in range(args.seeds):
            before = os.times()
            values = run_promisetune(Path(home), python, system, seed)
            after = os.times()
            cpu = sum(after[2:4]) - sum(before[2:4])  # its children's user + system time
            best = min(values[:100]) if index[system]["minimise"] else max(values[:100])
            print(
                f"| {system} | {seed} | {best:.6g} | {len(values)} | {cpu / 60:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
