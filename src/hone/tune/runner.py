"""The trial loop: baseline, search, confirmation, and leaving the system in a known state.

Every original value is journaled (fsync) before the first change; every finished trial is
committed to the study database at once; a failed trial is recorded with its reason, the knobs
are put back to the baseline and the study goes on. What touches the system (knobs, workload,
benchmark runs, the way back) is system.py's; this decides what to measure and what to keep."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import numpy as np

from hone.errors import BenchmarkError, HoneError, HostUnreachable
from hone.journal import Journal
from hone.journal.settings import settings_locked
from hone.optimizers import Optimizer, make_optimizer, start_first
from hone.output import config_text
from hone.project.model import Project
from hone.space import Config, SearchSpace
from hone.storage import StudyRecord, StudyStore
from hone.storage.store import FINISHED, INTERRUPTED, RUNNING
from hone.storage.summary import this_machine
from hone.tune import select, warmup, why
from hone.tune.confirm import Plan, detectable, quality_text, rounds_for, rounds_needed
from hone.tune.console import Reporter
from hone.tune.machine import Quiet, Watch, descendants, disturbance
from hone.tune.objective import Objective
from hone.tune.records import (
    CUT_OFF,
    KEPT_OPTIONS,
    MAX_REPEATS,
    Measurement,
    Pending,
    TuneOptions,
    TuneResult,
    keep_rules,
    project_attrs,
    recorded_tuning,
    result_attrs,
    rules_warning,
    tuning_attrs,
)
from hone.tune.risk import Choice, carry, choose, risky_changes
from hone.tune.stats import Gain, paired_gain, score_noise
from hone.tune.stops import check_stop, first_line, shielded, stop_error, stop_on_signals
from hone.tune.system import RestoreFailed, System, mean_metrics

T = TypeVar("T")


class Tuner:
    #: Scores are stored as gains in % over a baseline (hone worker), not as raw values.
    gains_stored = False

    def __init__(self, project: Project, reporter: Reporter, options: TuneOptions) -> None:
        self.project = project
        self.reporter = reporter
        self.options = options
        #: The `tuning:` settings the run goes by: the project file's, or a resumed study's.
        self.tuning = project.tuning
        self._settle()
        self.store = StudyStore(options.storage)
        self.journal = Journal.for_project(project.name)
        self.system = System(project, self.journal, reporter)
        self.warmups = 0
        self.started = time.monotonic()
        self.failures = 0
        self.last_error = ""
        #: The machine's background during the baseline, which a reading is held to.
        self.quiet: Quiet | None = None
        self.disturbed = 0
        #: The baseline phase's scores: with the confirmation's, the noise pooled into an interval.
        self.baseline_scores: list[float] = []
        #: Why the winner is not profiled (None: it is), decided before any change.
        self.why_off: str | None = None

    def _settle(self) -> None:
        """The run's settings: the command's options over the `tuning:` settings."""
        options, tuning = self.options, self.tuning
        self.engine = options.engine or tuning.engine
        self.budget = options.budget or tuning.budget
        self.baseline_repeats = options.baseline_repeats or tuning.baseline_repeats
        self.search_seed = options.seed if options.seed is not None else tuning.seed
        self.confirm_rounds = tuning.confirm_rounds
        self.max_repeats = options.max_repeats or MAX_REPEATS
        self.apply_policy = options.apply or tuning.apply
        self.objective = Objective(self.project.metrics, tuning.objective)

    def _settings(self) -> dict[str, Any]:
        """What a study records of how it runs, which _keep_settings reads back."""
        tuning = tuning_attrs(self.tuning)
        tuning.update(baseline_repeats=self.baseline_repeats, seed=self.search_seed)
        return {
            "engine": self.engine,
            "budget": self.budget,
            "apply": self.apply_policy,
            "tuning": tuning,
            "options": {key: getattr(self.options, key) for key in KEPT_OPTIONS},
        }

    def _keep_settings(self, study: StudyRecord) -> None:
        """A resumed study goes on with the settings it began with (`--baseline 1`, `--apply
        never`, `--min-detectable 3%`, the project file's confirmation and seed then), unless
        the resuming command gives others: the project file's or the defaults would change the
        search or the decision midway (the web UI's Resume gives none). A setting the study
        did not record is the project file's."""
        attrs = study.attrs
        kept = recorded_tuning(attrs)
        kept.update({key: attrs[key] for key in ("engine", "budget", "apply") if attrs.get(key)})
        self.tuning = replace(self.project.tuning, **kept)
        options = attrs.get("options") or {}
        given = {key: getattr(self.options, key) for key in KEPT_OPTIONS}
        self.options = replace(
            self.options,
            **{key: options[key] for key in KEPT_OPTIONS if key in options and given[key] is None},
        )
        self._settle()

    # -- the whole run ---------------------------------------------------------------------

    def run(self) -> TuneResult:
        actuators = [knob.actuator for knob in self.project.knobs if knob.group is None]
        actuators += self.system.cluster.actuators() if self.system.cluster else []
        owner = self.journal.owner()
        with self.journal.locked(), settings_locked(actuators, owner), stop_on_signals():
            resumed = self._resumed_study() if self.options.resume else None
            if self.options.min_detectable is not None and self.baseline_repeats < 3:
                raise HoneError("--min-detectable needs at least 3 baseline runs to know the noise")
            self._check_why()
            self.system.prepare()
            if self.system.cluster:
                self.system.cluster.prepare()  # every host's originals journaled, nothing changed
            baseline = self.system.read_baseline()
            study = self._open_study(resumed)
            space = self.project.space(baseline)
            self.journal.begin(study=study.name, engine=self.engine)
            for knob in self.project.knobs:
                if knob.group is None:
                    self.journal.remember(knob.name, knob.actuator)
            try:
                result = self._tune(study, space, baseline)
            except BaseException as exc:
                self._stop(study, exc)
            self.store.update(study, state=FINISHED, result=result_attrs(result))
            return result

    def _tune(self, study: StudyRecord, space: SearchSpace, baseline: Config) -> TuneResult:
        optimizer = self._optimizer(space, self.search_seed)
        history = self.store.trials(study) if self.options.resume else []
        baseline_runs = self._baseline(study, space, baseline, history)
        if not baseline_runs:
            raise BenchmarkError(f"every baseline run failed; the last: {self.last_error}")
        self._check_quality(study, baseline_runs)
        for run in baseline_runs:
            if space.feasible(run.config):
                optimizer.tell(run.config, -run.score if run.score is not None else None)
        done = self._replay(history, optimizer)
        # a profile's values (tuning.start) first; the other knobs keep the baseline's values
        optimizer = start_first(optimizer, [{**baseline, **p} for p in self.tuning.start])
        self.reporter.phase("search", self.budget)
        self.system.stage = "search"
        selector = self.tuning.feature_filter
        while done < self.budget:
            if not isinstance(optimizer, select.Narrowed) and select.due(
                selector, self.budget, done, space
            ):
                optimizer = self._select_knobs(study, optimizer, space)
            config = optimizer.ask()
            run = self.measure(study, space, config, "search", baseline)
            optimizer.tell(config, -run.score if run.ok else None)
            done += 1
            self.reporter.trial(done, self.budget, run)
        return self._finish(study, space, baseline, optimizer.recommend())

    def _optimizer(self, space: SearchSpace, seed: int | None) -> Optimizer:
        """A new optimiser over `space` with this run's engine, budget and tuning settings."""
        return make_optimizer(
            self.engine,
            space,
            seed=seed,
            budget=self.budget,
            random_starts=self.tuning.random_starts,
            split_count=self.tuning.split_count,
        )

    def _select_knobs(
        self, study: StudyRecord, optimizer: Any, space: SearchSpace
    ) -> select.Narrowed:
        """A-Tune's parameter selection: keep the knobs that matter most so far, hold the
        others at the best configuration's values, and go on over the smaller space. A resumed
        study keeps the selection it made."""
        selection = study.attrs.get(select.KEY)
        if not selection:
            count = self.tuning.feature_filter.count  # type: ignore[union-attr]
            selection = select.choose(space, optimizer, count)
            self._db(self.store.update, study, **{select.KEY: selection})
        self.reporter.note(select.kept_note(selection))
        return select.narrow(
            self.engine,
            optimizer,
            space,
            selection,
            seed=self.search_seed,
            budget=self.budget,
        )

    # -- phases ----------------------------------------------------------------------------

    def _baseline(
        self, study: StudyRecord, space: SearchSpace, baseline: Config, history: list[Any]
    ) -> list[Measurement]:
        runs = [
            Measurement(t.config, t.metrics, t.score, machine=t.machine or {})
            for t in history
            if t.phase == "baseline" and t.state == "complete"
        ]
        self.reporter.phase("baseline", self.baseline_repeats)
        self.system.stage = "baseline"
        self.system.apply(baseline)
        pending = self._baseline_readings(
            study, space, baseline, self.baseline_repeats - len(runs), succeeded=bool(runs)
        )
        # a slow first reading after the start is a warm-up whatever else the machine did
        pending, warm = self._drop_warmup(study, space, baseline, runs, pending)
        pending, disturbed = self._recheck_baseline(study, space, baseline, runs, pending)
        ok = runs + [run for _, run in pending]
        self.objective.set_baseline([r.metrics for r in ok])
        for trial_id, run in disturbed:
            run.score = self.objective.score(run.metrics)
            self._finish_trial(trial_id, run, phase="disturbed")
        for trial_id, run in warm:
            run.score = self.objective.score(run.metrics)
            self._finish_trial(trial_id, run, phase="warmup")
        for trial_id, run in pending:
            run.score = self.objective.score(run.metrics)
            self._finish_trial(trial_id, run)
        for run in runs:
            run.score = self.objective.score(run.metrics)
        scores = [r.score for r in ok if r.score is not None]
        if scores:
            self.store.update(
                study,
                baseline_metrics=self.objective.baseline,
                baseline_score=float(np.mean(scores)),
                baseline_cv=self._spread(scores),
            )
            mean = float(np.mean(scores))
            self.reporter.baseline(
                self.objective.baseline,
                self._spread(scores),
                len(scores),
                lambda score: self.objective.gain(score, mean),
            )
        return ok

    def _baseline_readings(
        self,
        study: StudyRecord,
        space: SearchSpace,
        baseline: Config,
        count: int,
        succeeded: bool = False,
    ) -> Pending:
        """`count` readings of the baseline, returned to be scored once the whole baseline is
        known. A failed one (a flaky client, a timeout) is recorded at once and replaced, so
        the noise band and every score rest on the readings asked for: at most `count` times,
        and only once a reading has succeeded (here, or earlier when `succeeded`), so that a
        benchmark that always fails stops the run after `count` readings as it did."""
        pending: Pending = []
        attempts = 0
        while len(pending) < count and attempts < 2 * count:
            if attempts >= count and not (pending or succeeded):
                break
            attempts += 1
            trial_id, run = self._run(study, space, baseline, "baseline")
            if run.error:
                self._finish_trial(trial_id, run)
                self.reporter.trial(0, 0, run)
                self.system.recover(baseline)
            else:
                pending.append((trial_id, run))
        return pending

    def _recheck_baseline(
        self,
        study: StudyRecord,
        space: SearchSpace,
        baseline: Config,
        earlier: list[Measurement],
        pending: Pending,
    ) -> tuple[Pending, Pending]:
        """The machine's usual background is the others' median CPU use over the baseline;
        a baseline reading well above it is measured again once."""
        self.quiet = Quiet.of([r.machine for r in earlier] + [run.machine for _, run in pending])
        if self.quiet is None:
            return pending, []
        kept, disturbed = [], []
        for trial_id, run in pending:
            run.disturbed = disturbance(run.machine, self.quiet)
            if not run.disturbed:
                kept.append((trial_id, run))
                continue
            disturbed.append((trial_id, run))
            self._note_disturbed(run)
            self._measure_again(study, space, baseline, kept)
        return kept, disturbed

    def _drop_warmup(
        self,
        study: StudyRecord,
        space: SearchSpace,
        baseline: Config,
        earlier: list[Measurement],
        pending: Pending,
    ) -> tuple[Pending, Pending]:
        """The first baseline reading after the workload started, against the others: a
        warm-up transient (warmup.outlier) is left out and measured again once."""
        first = next(((i, r) for i, r in pending if r.after_restart), None)
        if first is None:
            return pending, []
        others = [r.metrics for r in earlier] + [r.metrics for i, r in pending if r is not first[1]]
        directions = {m.name: m.direction for m in self.project.metrics if m.weight > 0}
        reason = warmup.outlier(first[1].metrics, others, directions)
        if reason is None:
            return pending, []
        self.warmups += 1
        self.reporter.note(f"warm-up reading after a restart ({reason}): left out, measured again")
        kept = [(i, r) for i, r in pending if r is not first[1]]
        self._measure_again(study, space, baseline, kept)
        return kept, [first]

    def _measure_again(
        self, study: StudyRecord, space: SearchSpace, baseline: Config, kept: Pending
    ) -> None:
        """One more baseline reading in place of one left out, kept for the baseline (a
        failed one replaced as any baseline reading is)."""
        kept.extend(self._baseline_readings(study, space, baseline, 1, succeeded=True))

    def _note_disturbed(self, run: Measurement) -> None:
        """Said before the line of the reading taken again: named, so that it is not read as
        being about the line above it (the previous trial's)."""
        self.disturbed += 1
        self.reporter.note(
            f"disturbed reading of {config_text(run.config)} ({run.disturbed}): measured again"
        )

    def _check_quality(self, study: StudyRecord, runs: list[Measurement]) -> None:
        """Before the search: how noisy the benchmark is, which gain the planned rounds can
        confirm, and for --min-detectable the rounds it needs (or a stop, nothing changed)."""
        scores = [r.score for r in runs if r.score is not None]
        self.baseline_scores = scores
        cv = self._spread(scores)
        most = max(self.max_repeats, self.confirm_rounds)
        target = self.options.min_detectable
        if target is not None and len(scores) < 2:
            raise HoneError(
                f"stopped before any change: {len(scores)} of {self.baseline_repeats} baseline "
                f"runs succeeded, so the benchmark's noise is unknown and no number of rounds "
                f"is known to confirm {target:g} %; see why the others failed (hone show "
                f"{self.project.name})"
            )
        relative = self.objective.single is not None and not self.gains_stored
        if target is not None:
            rounds = rounds_for(cv, target, self.confirm_rounds, most, relative)
            if rounds is None:
                need = rounds_needed(cv, target, relative=relative)
                allow = f", or allow --max-repeats {need}" if need else ""
                reach = detectable(cv, most, Plan(most, most), relative)
                raise HoneError(
                    f"stopped before any change: the benchmark varies by {cv:.1f} % "
                    f"({len(scores)} baseline runs), so {most} confirmation rounds could confirm "
                    f"gains of {reach:.1f} % or more, not {target:g} %; lengthen the benchmark "
                    f"or quiet the machine{allow}"
                )
            self.confirm_rounds = rounds
        plan = Plan(self.confirm_rounds, most)
        quality = {
            "cv": round(cv, 3),
            "runs": len(scores),
            "rounds": self.confirm_rounds,
            "max_rounds": plan.most,
            "detectable": round(detectable(cv, plan.planned, plan, relative), 3),
            "detectable_max": round(detectable(cv, plan.most, plan, relative), 3),
            "min_detectable": target,
            "quiet": None if self.quiet is None else asdict(self.quiet),
        }
        self.store.update(study, quality=quality)
        self.reporter.note(quality_text(quality))

    def _spread(self, scores: list[float]) -> float:
        """The noise of baseline scores: CV in % for one metric, else the standard deviation
        of the combined score in points (and of gains already relative, as workers store)."""
        return score_noise(scores, self.objective.single is None or self.gains_stored)

    def _replay(self, history: list[Any], optimizer: Any) -> int:
        done = 0
        for trial in history:
            # a trial cut off by a kill of hone says nothing about its configuration, and the
            # budget is for measurements: it is neither replayed nor counted
            if trial.phase != "search" or trial.error == CUT_OFF:
                continue
            score = self.objective.score(trial.metrics) if trial.state == "complete" else None
            optimizer.tell(trial.config, -score if score is not None else None)
            done += 1
        if done:
            self.reporter.note(
                f"resumed: {done} finished trials replayed (engine {self.engine}, "
                f"budget {self.budget})"
            )
        return done

    def _finish(
        self, study: StudyRecord, space: SearchSpace, baseline: Config, recommended: Config | None
    ) -> TuneResult:
        candidates = self._candidates(study, space, baseline, recommended)
        metrics: dict[int, list[dict[str, float]]] = defaultdict(list)
        choice, rounds = Choice(None, None, []), 0
        if candidates:
            choice, rounds = self._confirm(study, space, baseline, candidates, metrics)
        best, best_gain = choice.best, choice.gain
        if best is not None and best_gain is not None and best_gain.mean > 0:
            self.system.stage = "why"
            self._why(study, baseline, best)
        self.system.stage = "end"
        outcome, reason = self._decide(choice)
        if outcome == "applied" and best is not None:
            # a workload hone owns is stopped next: its knobs are set, it is not restarted
            self.system.apply(best, serve=not self.system.owns_workload)
            self.journal.end("applied")
        else:
            self.system.restore()
        self.system.stop_owned_workload()
        best_index = next((i for i, c in enumerate(candidates, 1) if c is best), 0)
        return TuneResult(
            study=study.name,
            baseline=baseline,
            baseline_metrics=self.objective.baseline,
            best=best,
            best_metrics=mean_metrics(metrics.get(best_index, [])),
            gain=best_gain,
            outcome=outcome,
            reason=reason,
            trials=self.system.iteration,
            failures=self.failures,
            elapsed=time.monotonic() - self.started,
            risk=choice.record(),
            disturbed=self.disturbed,
            confirm_rounds=rounds,
            warmup=self.warmups,
            restarts=dict(self.system.restarts),
            confirm_baseline_metrics=mean_metrics(metrics.get(0, [])) if best else {},
        )

    def _confirm(
        self,
        study: StudyRecord,
        space: SearchSpace,
        baseline: Config,
        candidates: list[Config],
        metrics: dict[int, list[dict[str, float]]],
    ) -> tuple[Choice, int]:
        """Interleaved rounds (baseline, candidates, baseline, ...) with a look at the planned
        rounds and a few others (confirm.Plan): stop once the choice is decisive or nothing is
        ahead; when the leader is close, go on with it alone up to the most rounds."""
        plan = Plan(self.confirm_rounds, max(self.max_repeats, self.confirm_rounds))
        relative = self.objective.single is not None and not self.gains_stored
        scores: dict[int, list[float | None]] = defaultdict(list)
        gains: dict[int, Gain] = {}
        active = list(range(1, len(candidates) + 1))
        lineup = [baseline, *candidates]
        self.reporter.phase("confirm", plan.planned * (len(candidates) + 1))
        self.system.stage = "confirm"
        choice, round_ = Choice(None, None, []), 0
        earlier: Choice | None = None
        order: list[int] = []
        flaky: set[int] = set()
        while True:
            total = plan.planned if round_ < plan.planned else plan.most
            order = self._round_order(lineup, [0, *active], order)
            for index in order:
                run = self.measure(study, space, lineup[index], "confirm", baseline, round=round_)
                scores[index].append(run.score if run.ok else None)
                if run.ok:
                    metrics[index].append(run.metrics)
                self.reporter.trial(round_ + 1, total, run)
            round_ += 1
            level = plan.level(round_)
            if level is None:
                continue
            # the baseline's noise over the whole study is pooled into each interval (stats.py)
            base = self.baseline_scores + [s for s in scores[0] if s is not None]
            spread = (self._spread(base), len(base) - 1)
            for index in active:
                gains[index] = paired_gain(scores[index], scores[0], relative, level, spread)
            flaky = self._flaky(candidates, scores, active, flaky)
            confirmed = [(candidates[i - 1], gains[i]) for i in active if i not in flaky]
            choice = choose(self.project, baseline, confirmed, bool(self.options.allow_risk))
            if earlier is not None:  # extended: the one(s) set aside keep their earlier look
                choice = carry(choice, earlier)
            worse = all(g.worse for i, g in gains.items() if i in active)
            if (choice.gain is not None and choice.gain.significant) or worse:
                return choice, round_
            if round_ < plan.planned:
                continue
            close = choice.gain is not None and choice.gain.mean > 0
            if round_ >= plan.most or not close or self.apply_policy != "auto":
                return choice, round_
            if earlier is None:
                earlier, active = choice, [candidates.index(choice.best) + 1]
                self.reporter.note(
                    f"close ({choice.gain}): more rounds, up to {plan.most}, for "
                    + config_text(choice.best or {})
                )

    def _flaky(
        self,
        candidates: list[Config],
        scores: dict[int, list[float | None]],
        active: list[int],
        known: set[int],
    ) -> set[int]:
        """The candidates (indices) that failed in more confirmation rounds than the baseline:
        never confirmed, each named once. Paired gains count the rounds where both ran, so a
        configuration failing in every other round was confirmed by the rounds it survived,
        and applied."""
        failed = {i: sum(s is None for s in scores[i]) for i in [0, *active]}
        flaky = set(known)
        for index in active:
            if failed[index] > failed[0] and index not in flaky:
                flaky.add(index)
                self.reporter.note(
                    f"{config_text(candidates[index - 1])} failed in {failed[index]} of "
                    f"{len(scores[index])} confirmation rounds, the baseline in {failed[0]}: "
                    "not applied"
                )
        return flaky

    def _round_order(self, lineup: list[Config], members: list[int], last: list[int]) -> list[int]:
        """The order of one confirmation round. A workload that restarts for a configuration
        and warms up after each restart (`benchmark: {warmup: true}`) is measured in a snake:
        the first round measures configurations that share their restart knobs' values side
        by side, those of the running one first, and each later round reverses the one before,
        so the restart between two rounds is saved too (and drift cancels as in A B B A).
        Otherwise every reading follows the same restart and the order stays fixed."""
        if not (self.system.workload.managed and self.project.benchmark.warmup):
            return members
        if last:
            order = [i for i in reversed(last) if i in members]
            return order + [i for i in members if i not in order]
        keys = [self.system.restart_values(lineup[i]) for i in members]
        running = self.system.restart_values(self.system.applied) if self.system.restarted else None
        groups = sorted(dict.fromkeys(keys), key=lambda key: key != running)  # stable
        ranked = sorted(range(len(members)), key=lambda n: (groups.index(keys[n]), n))
        return [members[n] for n in ranked]

    def _candidates(
        self, study: StudyRecord, space: SearchSpace, baseline: Config, recommended: Config | None
    ) -> list[Config]:
        """The optimiser's pick first, then the best distinct configurations by mean score;
        none with `confirm: {candidates: 0}` (no confirmation: nothing is confirmed, so every
        knob is put back)."""
        if self.tuning.confirm_candidates < 1:
            return []
        means: dict[tuple, list[float]] = defaultdict(list)
        configs: dict[tuple, Config] = {}
        for trial in self._db(self.store.trials, study):
            if trial.phase == "search" and trial.state == "complete" and trial.score is not None:
                key = space.key(trial.config)
                means[key].append(trial.score)
                configs[key] = trial.config
        ranked = sorted(means, key=lambda k: -float(np.mean(means[k])))
        chosen: list[Config] = []
        keys = set()
        if _comparable(space, baseline):
            keys.add(space.key(baseline))
        for config in ([recommended] if recommended else []) + [configs[k] for k in ranked]:
            key = space.key(config)
            if key not in keys and key in configs:
                keys.add(key)
                chosen.append(configs[key])
            if len(chosen) >= self.tuning.confirm_candidates:
                break
        if all(risky_changes(self.project, c, baseline) for c in chosen):
            # a risky winner is applied only with --allow-risk: confirm the best safe one too
            safe = (
                configs[k] for k in ranked if not risky_changes(self.project, configs[k], baseline)
            )
            extra = next((c for c in safe if space.key(c) not in keys), None)
            if extra is not None:
                chosen.append(extra)
        return chosen

    def _decide(self, choice: Choice) -> tuple[str, str]:
        best, gain = choice.best, choice.gain
        risky = ", ".join(r.short() for r in choice.risks)
        if choice.risks and not choice.allowed:
            held = f"the winner ({choice.other_gain}) needs --allow-risk: {risky}"
            if best is None or gain is None:
                return "restored", f"{held}; no safe configuration was confirmed"
            outcome, reason = self._decide(Choice(best, gain, []))
            return outcome, f"{held}; the best safe configuration: {reason}"
        if choice.risks:
            outcome, reason = self._decide(Choice(best, gain, []))
            if outcome == "applied":
                reason += f" (--allow-risk: {risky})"
            return outcome, reason
        if best is None or gain is None:
            return "restored", "no configuration could be confirmed"
        if self.apply_policy == "never":
            return "restored", "--apply never: every knob put back"
        if self.apply_policy == "always":
            return "applied", f"--apply always: applied the best confirmed configuration ({gain})"
        if gain.significant:
            return "applied", f"beats the baseline beyond the noise: {gain}"
        return "restored", f"not better than the baseline beyond the noise ({gain}): knobs put back"

    # -- why it won ------------------------------------------------------------------------

    def _check_why(self) -> None:
        """--why needs perf (a clear stop before any change); by default it is skipped."""
        if self.options.why is False:
            self.why_off = "--no-why"
            return
        host = self.project.benchmark.host
        self.why_off = (
            f"the benchmark runs on host {host}, perf records this machine"
            if host is not None
            else why.unavailable()
        )
        if self.why_off and self.options.why:
            raise HoneError(f"--why: {self.why_off}")

    def _why(self, study: StudyRecord, baseline: Config, best: Config) -> None:
        """One more reading of the baseline and of the winner under perf, out of every
        statistic, and the differential of their time profiles: of a launched workload's
        busiest process when there is one (the server, not its load generator). A failure is
        one line."""
        if self.why_off:
            if self.why_off != "--no-why":
                self.store.update(study, why={"missing": self.why_off})
                self.reporter.note(f"why it won: not profiled ({self.why_off})")
            return
        self.reporter.note("why it won: profiling one reading of the baseline and the winner")
        try:
            with tempfile.TemporaryDirectory(prefix="hone-why-") as folder:
                profiles, readings, served = {}, {}, set[str]()
                pair = [("baseline", baseline), ("winner", best)]
                if self.system.needs_restart(baseline) and not self.system.needs_restart(best):
                    pair.reverse()  # the running one first: one restart fewer
                for label, config in pair:
                    self.system.apply(config)
                    recordings = self._profiled_reading(Path(folder), label, readings)
                    benchmark, *workload = why.time_profiles(recordings)
                    profiles[label] = why.merged([benchmark, *workload])
                    served.update(*(profile.threads() for profile in workload))
            moved = {k: (baseline.get(k), v) for k, v in best.items() if baseline.get(k) != v}
            record = why.compare(
                profiles["baseline"],
                profiles["winner"],
                moved,
                self._importance(study),
                served=served,
            )
            record["readings"] = readings
        except (HoneError, OSError, subprocess.SubprocessError) as exc:
            record = {"missing": f"profiling failed: {first_line(exc)}"}
        self.store.update(study, why=record)
        for line in why.lines(record):
            self.reporter.note(line)

    def _profiled_reading(
        self, folder: Path, label: str, readings: dict[str, dict[str, float]]
    ) -> list[Path]:
        """The benchmark under `perf record` (and a launched workload's process attached)."""
        data, served = folder / f"{label}.data", folder / f"{label}-workload.data"
        process = self.system.workload.process
        if process is None or process.poll() is not None:
            readings[label] = self.system.run_benchmark(prefix=why.benchmark_argv(data))
            return [data]
        with why.attached(lambda: [process.pid, *descendants(process.pid)], served):
            readings[label] = self.system.run_benchmark(prefix=why.benchmark_argv(data))
        return [data, served]

    def _importance(self, study: StudyRecord) -> dict[str, float]:
        """Each knob's share, from the insight fitted now and kept for `hone show` and the
        report (the same trees: they need not fit them again)."""
        from hone.tune.views import keep_insight

        return {row["knob"]: row["share"] for row in keep_insight(self.store, study)}

    # -- measuring -------------------------------------------------------------------------

    def measure(
        self,
        study: StudyRecord,
        space: SearchSpace,
        config: Config,
        phase: str,
        baseline: Config,
        **attrs: Any,
    ) -> Measurement:
        """Apply, benchmark, record. A failure is recorded and the knobs go back to baseline;
        a reading taken while the machine was disturbed is recorded as such and taken again."""
        trial_id, run = self._run(study, space, config, phase, **attrs)
        if run.ok and run.disturbed:
            self._finish_trial(trial_id, run, phase="disturbed")
            self._note_disturbed(run)
            trial_id, run = self._run(study, space, config, phase, **attrs)
        self._finish_trial(trial_id, run)
        if run.error:
            self.system.recover(baseline)
        return run

    def _run(
        self, study: StudyRecord, space: SearchSpace, config: Config, phase: str, **attrs: Any
    ) -> tuple[int, Measurement]:
        trial_id = self._start_trial(study, space, config, phase, **attrs)
        return trial_id, self._execute(config, phase)

    def _start_trial(
        self, study: StudyRecord, space: SearchSpace, config: Config, phase: str, **attrs: Any
    ) -> int:
        self.system.count_trial()
        return self.store.start_trial(study, space, config, phase, **attrs)

    def _execute(self, config: Config, phase: str) -> Measurement:
        """Apply and benchmark one configuration of a started trial; a failure is in `error`."""
        check_stop()  # a Ctrl-C whose exception was lost ends the run here
        run = Measurement(dict(config))
        started = time.monotonic()
        try:
            self.system.apply(config)
            run.after_restart, self.system.fresh = self.system.fresh, False
            applied = time.monotonic() - started
            watch = Watch()
            run.metrics = self.system.benchmark()
            run.machine = watch.state()
            if self.quiet is not None:
                run.disturbed = disturbance(run.machine, self.quiet)
            run.metrics["_apply_seconds"] = applied
            broken = self.objective.violations(run.metrics)
            if broken:
                raise BenchmarkError("; ".join(broken))
            if self.objective.baseline or phase != "baseline":
                run.score = self._score(run.metrics)
        except HostUnreachable:
            raise  # the study stops: no configuration is to blame for a host gone
        except HoneError as exc:
            run.error = self.last_error = str(exc)
        run_seconds = time.monotonic() - started
        run.metrics.setdefault("_seconds", round(run_seconds, 3))
        return run

    def _score(self, metrics: Mapping[str, float]) -> float:
        return self.objective.score(metrics)

    def _db(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """A call to the study database: made once here; `hone worker` waits out a shared
        database that stops answering."""
        return call(*args, **kwargs)

    def _finish_trial(self, trial_id: int, run: Measurement, phase: str | None = None) -> None:
        """Store the outcome; `phase` replaces the trial's phase (`disturbed`: a reading kept
        for the record and left out of every comparison)."""
        if run.error:
            self.failures += 1
        metrics = {k: v for k, v in run.metrics.items() if not k.startswith("_")}
        extra: dict[str, Any] = {}
        if run.machine:
            extra["machine"] = run.machine
        if run.disturbed:
            extra["disturbed"] = run.disturbed
        self._db(
            self.store.finish_trial,
            trial_id,
            score=run.score if not run.error else None,
            metrics=metrics,
            error=run.error,
            seconds=run.metrics.get("_seconds"),
            benchmark_seconds=run.metrics.get("_benchmark_seconds"),
            apply_seconds=run.metrics.get("_apply_seconds"),
            phase=phase,
            extra=extra,
        )
        run.metrics = metrics

    # -- the study's record and its end ----------------------------------------------------

    def _resumed_study(self) -> StudyRecord:
        """The project's study to resume, with its own settings and rules taken: checked
        before any change, so that its --why or --min-detectable stops the run as at its
        start."""
        study = self.store.find(self.project.name)
        if study.state == FINISHED:
            raise HoneError(f"study {study.name} already finished; nothing to resume")
        host = study.attrs.get("host")
        if host is not None and host != socket.gethostname():
            # a database several machines share: the study, its baseline and the trial its
            # run may still be measuring are that machine's (and its knobs' originals are in
            # that machine's journal); resumed here, its running trial was failed under it
            raise HoneError(
                f"study {study.name} runs on host {host}: its baseline and trials are that"
                " machine's; resume it there, or start a new study here without --resume"
            )
        self._check_same_project(study)
        self._keep_settings(study)
        differ = keep_rules(self.project, study.attrs)
        if differ:
            self.reporter.warn(rules_warning(differ, study.name))
        return study

    def _open_study(self, resumed: StudyRecord | None) -> StudyRecord:
        if resumed is not None:
            lost = self.store.fail_running(resumed, CUT_OFF)
            self.store.update(
                resumed,
                state=RUNNING,
                pid=os.getpid(),
                machine=this_machine(),
                host=socket.gethostname(),
                **self._settings(),
            )
            if lost:
                self.reporter.note(f"{lost} interrupted trial(s) recorded as failed")
            return resumed
        study = self.store.create(
            self.project.name,
            {
                **self._settings(),
                "pid": os.getpid(),
                "machine": this_machine(),
                "host": socket.gethostname(),
                **project_attrs(self.project),
            },
        )
        self.reporter.start(self.project, study.name, self.engine, self.budget)
        return study

    def _check_same_project(self, study: StudyRecord) -> None:
        """A resumed study replays its trials into this project's search space and scores
        them by its metrics: a knob added, removed or given another range or values, or a
        metric changed since, makes its record unreadable here. One line, before any change."""

        def scored(metrics: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
            return [(m["name"], m["direction"], m["weight"]) for m in metrics]  # not units

        now = json.loads(json.dumps(project_attrs(self.project)))
        changed = []
        if study.attrs.get("space") not in (None, now["space"]):
            changed.append("knobs")
        if scored(study.attrs.get("metrics") or now["metrics"]) != scored(now["metrics"]):
            changed.append("metrics")
        if changed:
            was = ", ".join(study.attrs.get("space", {}))
            raise HoneError(
                f"cannot resume study {study.name}: its {' and '.join(changed)} differ from "
                f"the project's now (its knobs: {was}); put the project back as it was, or "
                "start a new study without --resume",
                file=self.project.sources[0] if self.project.sources else None,
            )

    def _stop(self, study: StudyRecord, exc: BaseException) -> NoReturn:
        """End the run on `exc`: knobs back (a second Ctrl-C or SIGTERM cannot cut that short),
        then the error that says whether they are."""
        with shielded():
            back = self._abort(study, exc)
        error = stop_error(exc, back, self.project.name)
        if isinstance(exc, RestoreFailed):
            # the run stopped on a restore that failed, and put_back tried it again: its
            # outcome is said once, as it stands now
            error = self.system.restore_error or HoneError(
                f"stopped, every knob put back at a second try (the first: {exc.causes})"
            )
        if error is exc:
            raise exc
        raise error from None

    def _abort(self, study: StudyRecord, exc: BaseException) -> bool:
        """Any error or interrupt: put every knob back and stop what hone started first, then
        keep records (on a full disk the record fails; the knobs must not stay changed).
        Returns whether every knob is back."""
        back = self.system.put_back(exc)
        # the study's state first: it is what the UI, `hone studies` and a resume go by, and a
        # trial that cannot be failed (the one cut short is failed again on resume) must not
        # leave the study `running` with its process gone
        records = {
            "the study's end": lambda: self.store.update(
                study, state=INTERRUPTED, error=str(exc)[:500]
            ),
            "the trial cut short": lambda: self.store.fail_running(study, CUT_OFF),
        }
        for what, record in records.items():
            try:
                record()
            except Exception as record_error:
                self.reporter.warn(f"{what} could not be recorded: {record_error}")
        return back


def _comparable(space: SearchSpace, config: Config) -> bool:
    return set(space.domains) <= set(config)
