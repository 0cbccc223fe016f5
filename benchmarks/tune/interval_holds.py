"""Does a confirmed gain's interval hold? Tune an example end to end, then measure the baseline
and the confirmed best again in fresh interleaved rounds (20 by default) and check that the
re-measured mean gain lies inside the interval the study confirmed. Target (issue 22): the
interval holds in >= 90 % of the studies.

    SQLITE_COMMITS=20 python -m benchmarks.tune.interval_holds examples/sqlite \\
        [--studies 20] [--rounds 20] [--budget 8] [--first-seed 1]

Each study runs on a copy of the project in its own temporary HONE_HOME (seed = first seed +
index, default options otherwise, no profile); the re-measurement sets the knobs with the
project's own actuators and puts the baseline back. Projects whose workload hone restarts are
not supported (a restart per reading would have to be replayed). Prints one line per study
(with the half-width the paired differences alone would have given, to see when the
baseline's pooled noise widened the interval) and the totals."""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from hone import shell
from hone.project import load_project
from hone.project.model import Project
from hone.space import Config
from hone.storage import StudyStore
from hone.tune.console import Reporter
from hone.tune.metrics import extract
from hone.tune.objective import Objective
from hone.tune.records import TuneOptions, TuneResult
from hone.tune.runner import Tuner
from hone.tune.stats import Gain, paired_gain


def apply(project: Project, config: Config) -> None:
    for knob in project.knobs:
        value = config[knob.name]
        knob.actuator.apply(value if isinstance(value, str) else knob.domain.format(value))


def reading(project: Project, objective: Objective) -> float:
    bench = project.benchmark
    result = shell.run(bench.command, timeout=bench.timeout, cwd=project.directory)
    if not result.ok:
        raise SystemExit(f"benchmark failed: {result.tail()}")
    output = result.stdout + result.stderr
    return objective.score({m.name: extract(m, output) for m in project.metrics})


def remeasure(project: Project, result: TuneResult, rounds: int) -> float:
    """The mean paired gain (%) of the best over the baseline in fresh interleaved rounds."""
    objective = Objective(project.metrics, project.tuning.objective)
    objective.baseline = dict(result.baseline_metrics)
    base, best = [], []
    assert result.best is not None
    try:
        for _ in range(rounds):
            apply(project, result.baseline)
            base.append(reading(project, objective))
            apply(project, result.best)
            best.append(reading(project, objective))
    finally:
        apply(project, result.baseline)
    return paired_gain(best, base, objective.single is not None).mean


def paired_alone(project: Project, result: TuneResult) -> Gain:
    """The confirmed best's interval from its paired differences alone (the t-interval
    without the baseline's pooled noise), at the level the study's look used."""
    assert result.best is not None and result.gain is not None
    store = StudyStore()
    trials = [t for t in store.trials(store.find(result.study)) if t.phase == "confirm"]

    def scores(config: Config) -> dict[int, float | None]:
        wanted = {k: str(v) for k, v in config.items()}
        return {
            t.round: t.score
            for t in trials
            if t.round is not None and {k: str(v) for k, v in t.config.items()} == wanted
        }

    base, best = scores(result.baseline), scores(result.best)
    rounds = sorted(set(base) & set(best))
    relative = Objective(project.metrics, project.tuning.objective).single is not None
    return paired_gain(
        [best[r] for r in rounds], [base[r] for r in rounds], relative, result.gain.level
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project")
    parser.add_argument("--studies", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--budget", type=int, default=8)
    parser.add_argument("--first-seed", type=int, default=1)
    args = parser.parse_args()
    held, applied_held, applied, counted = 0, 0, 0, 0
    for index in range(args.studies):
        seed = args.first_seed + index
        with tempfile.TemporaryDirectory() as tmp:
            os.environ["HONE_HOME"] = tmp
            copy = Path(tmp) / "project"  # knobs set in the project's own files change a copy
            shutil.copytree(args.project, copy)
            project = load_project(copy)
            if project.workload.managed:
                raise SystemExit("a project whose workload hone restarts is not supported")
            options = TuneOptions(budget=args.budget, seed=seed, apply="never", why=False)
            result = Tuner(project, Reporter(), options).run()
            if result.best is None or result.gain is None:
                print(f"seed {seed}: no confirmed configuration", flush=True)
                continue
            alone = paired_alone(project, result)
            again = remeasure(project, result, args.rounds)
        gain = result.gain
        inside = gain.low <= again <= gain.high
        significant = gain.significant
        counted += 1
        held += inside
        applied += significant
        applied_held += inside and significant
        print(
            f"seed {seed}: confirmed {gain} "
            f"(paired alone: {alone.low:+.1f} % to {alone.high:+.1f} %)"
            f" -> re-measured {again:+.1f} % over {args.rounds} rounds: "
            f"{'holds' if inside else 'OUTSIDE'}" + (" (beyond the noise)" if significant else ""),
            flush=True,
        )
    print(
        f"{project.name}: the interval holds the re-measured gain in {held} of {counted} "
        f"studies ({applied_held} of {applied} whose gain was beyond the noise)"
    )


if __name__ == "__main__":
    main()
