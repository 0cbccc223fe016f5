"""`hone worker`: one of several machines of the same kind running the trials of one study kept
in a shared database (PostgreSQL).

Each worker journals its own knobs and measures its own baseline (machines of one kind still
differ a little), so every score it stores is its gain in percent over its own baseline: scores
of different machines compare as gains, never as raw numbers. Proposals are made one at a time
by the worker's optimiser fed every finished trial of every worker, with the trials still
running elsewhere passed as pending (the constant liar of `ask_batch`), and started under a lock
on the study that first checks nothing started meanwhile clashes with them.
A running trial holds a lease (Optuna's heartbeat table, renewed by a thread); a trial whose
lease runs out is failed with the reason by the next worker that looks, and is not counted in
the budget. A database that stops answering is waited for (`--db-wait`), the finished trial
held meanwhile, and a worker's lost contact is not counted against the others' leases.
When the budget is spent, one worker (elected by a lock the database releases if it dies)
confirms the best configurations against its own baseline and stores the decision;
every worker then applies the winner on its own machine, or puts its knobs back."""

from __future__ import annotations

import json
import os
import socket
import time
import zlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import numpy as np

from hone.errors import BenchmarkError, HoneError
from hone.journal.settings import settings_locked
from hone.optimizers import start_first
from hone.optimizers.base import Optimizer, StartFirst
from hone.project.model import Project
from hone.space import Config, SearchSpace
from hone.storage import StudyRecord, TrialRecord
from hone.storage.lease import (
    Heartbeat,
    running_trials,
    started_since,
    study_locked,
    try_locked,
)
from hone.storage.outage import DEFAULT_WAIT, MAX_WAIT, WAIT_RANGE, DatabaseLost, Outage
from hone.storage.store import FINISHED, RUNNING, TrialClosed, _now
from hone.storage.summary import on_this_machine, pid_alive, read_trials, this_machine
from hone.tune import select
from hone.tune.console import Reporter
from hone.tune.records import (
    CUT_OFF,
    Measurement,
    TuneOptions,
    keep_rules,
    project_attrs,
    rules_warning,
)
from hone.tune.risk import Choice, gain_dict
from hone.tune.runner import Tuner
from hone.tune.stats import score_noise
from hone.tune.stops import Stopped, first_line, stop_on_signals

#: The reason stored with a trial whose worker stopped renewing its lease.
LOST = (
    "worker {worker} stopped reporting: no heartbeat for {silent:.0f} s "
    "(killed, crashed or cut off from the database)"
)
#: The reason stored with a confirming worker's trial when another worker took over.
SUPERSEDED = (
    "worker {worker} stopped while confirming (the database released its confirm lock: "
    "killed, crashed or cut off); another worker confirms instead"
)
#: The reason stored with a confirming worker's trial when its confirm lock went with its
#: connection to the database (a restart of the server, a cut): another worker may confirm.
ABANDONED = (
    "worker {worker} was cut off from the database while confirming and lost its confirm"
    " lock; the confirmation is made again by whichever worker takes the lock"
)
#: A lease shorter than a few heartbeats (one every sixth of it, at least 0.2 s apart) loses
#: live trials; one past a day is no lease (and overflows the heartbeat thread's timer).
MIN_LEASE, MAX_LEASE = 1.0, 86400.0
LEASE_RANGE = "--lease must be between 1 and 86400 seconds, not {lease:g}"
WAIT = "wait"  # the budget is spent but trials run elsewhere: one of them may yet be lost
POLL = 0.5  # seconds between looks at the study while waiting for those trials
T = TypeVar("T")
#: The options of a worker's command that the study it joins decides: the option's flag and
#: its name in a warning when the command gave another value.
JOIN_OPTIONS = {
    "engine": ("engine", "engine"),
    "budget": ("budget", "budget"),
    "apply": ("apply", "apply"),
    "seed": ("seed", "seed"),
    "baseline_repeats": ("baseline", "baseline count"),
}
#: The settings a study records (Tuner._settings), as the project file's `tuning:` names them.
TUNING_KEYS = {
    "engine": "engine",
    "budget": "budget",
    "apply": "apply",
    "baseline_repeats": "baseline",
    "seed": "seed",
    "random_starts": "random_starts",
    "split_count": "split_count",
    "confirm_candidates": "confirm",
    "confirm_rounds": "confirm",
    "objective": "objective",
    "start": "start",
    "feature_filter": "select",
}


@dataclass
class WorkerOptions:
    storage: str | None = None
    worker_id: str | None = None
    study: str | None = None  # a study to join; default: the project's running shared study
    engine: str | None = None
    budget: int | None = None
    baseline_repeats: int | None = None
    seed: int | None = None
    lease: float = 60.0  # seconds without a heartbeat after which a trial is lost
    apply: str | None = None  # auto | always | never, when this worker creates the study
    db_wait: float = DEFAULT_WAIT  # seconds to wait for a database that stops answering


@dataclass
class WorkerResult:
    study: str
    worker: str
    trials: int  # run by this worker, baseline included
    failures: int
    study_state: str
    best: Config | None  # the winner the study decided on, else its best search trial
    best_gain: float | None  # its gain over its worker's baseline, in percent
    elapsed: float
    outcome: str  # applied (the winner is on this machine) | restored
    reason: str


class Worker(Tuner):
    gains_stored = True
    #: the search's optimiser (set when the search starts), narrowed to the study's selection
    #: of knobs once that is made
    optimizer: Optimizer | StartFirst | select.Narrowed

    def __init__(self, project: Project, reporter: Reporter, options: WorkerOptions) -> None:
        super().__init__(
            project,
            reporter,
            TuneOptions(
                engine=options.engine,
                budget=options.budget,
                baseline_repeats=options.baseline_repeats,
                apply=options.apply,
                seed=options.seed,
                storage=options.storage,
            ),
        )
        if not MIN_LEASE <= options.lease <= MAX_LEASE:
            raise HoneError(LEASE_RANGE.format(lease=options.lease))
        if not 0 <= options.db_wait <= MAX_WAIT:
            raise HoneError(WAIT_RANGE.format(wait=options.db_wait))
        if self.system.cluster is not None:
            raise HoneError(
                f"{project.name} puts knobs on host groups: a cluster project runs with"
                " `hone tune` on one controller, not with `hone worker` (docs/cluster.md)"
            )
        self.worker_options = options
        self.id = options.worker_id or socket.gethostname()
        self.outage = Outage(self.store.url, options.db_wait, reporter.warn)
        self.heart = Heartbeat(self.store, max(0.2, options.lease / 6), self.outage)
        #: while confirming: whether this worker still holds the study's confirm lock
        self.confirm_held: Callable[[], bool] | None = None
        self.base_score = 0.0
        self.told: set[int] = set()
        self.seed: int | None = None
        #: how many times a worker of this name has joined the study, this start included
        self.starts = 1
        self.record: dict[str, Any] = {}
        self.decision: dict[str, Any] = {}

    # -- the whole run ---------------------------------------------------------------------

    def run(self) -> WorkerResult:  # type: ignore[override]
        actuators = [knob.actuator for knob in self.project.knobs]
        owner = self.journal.owner()
        with self.journal.locked(), settings_locked(actuators, owner), stop_on_signals():
            self.system.prepare()
            baseline = self.system.read_baseline()
            study = self._db(self._join)
            space = self.project.space(baseline)
            self.journal.begin(study=study.name, engine=self.engine, worker=self.id)
            for knob in self.project.knobs:
                self.journal.remember(knob.name, knob.actuator)
            self.heart.start()
            try:
                self._work(study, space, baseline)
                self.decision = self._end(study, space, baseline)
                self.system.stop_owned_workload()
            except BaseException as exc:
                self._stop(study, exc)
            finally:
                self.heart.stop()
            self._record(study, state="finished", finished=_now())
            return self._result(study)

    def _work(self, study: StudyRecord, space: SearchSpace, baseline: Config) -> None:
        seed = self.search_seed  # the study's
        # each worker its own random stream: the same seed would give the same designs; and
        # each start of a worker its own: one started again under its name would propose what
        # its predecessor measured (an optimiser's first points come from the stream alone)
        stream = self.id if self.starts == 1 else f"{self.id}#{self.starts}"
        self.seed = None if seed is None else seed + zlib.crc32(stream.encode()) % 65536
        optimizer = self._optimizer(space, self.seed)
        for run in self._measure_baseline(study, space, baseline):
            if space.feasible(run.config) and run.score is not None:
                optimizer.tell(run.config, -run.score)
        # a profile's values (tuning.start) first, by whichever worker asks first: one measured
        # or running elsewhere is known to every worker's optimiser and not asked again
        self.optimizer = start_first(optimizer, [{**baseline, **p} for p in self.tuning.start])
        self.reporter.phase("search", self.budget)
        while True:
            claim = self._db(self._claim, study, space)
            if claim == WAIT:
                time.sleep(min(self.heart.interval, POLL))
                continue
            if claim is None:
                return
            trial_id, rank, config = claim
            run = self._execute(config, "search")
            self._finish_trial(trial_id, run)
            if run.error:
                self.system.recover(baseline)
            self.reporter.trial(rank, self.budget, run)

    # -- joining the study -----------------------------------------------------------------

    def _join(self) -> StudyRecord:
        """Join the project's running shared study, or create it; under a lock, so workers
        started together make one study."""
        wanted = self.worker_options.study or self.project.name
        with study_locked(self.store, f"project:{wanted}"):
            study = self._shared_study(wanted)
            if study is None:
                study = self.store.create(self.project.name, self._study_attrs())
            _require_same_project(study, project_attrs(self.project))
            set_aside, unused = self._take_settings(study)
            differ = keep_rules(self.project, study.attrs)
            self._cut_off_predecessor(study)
            before = study.attrs.get(f"worker:{self.id}")
            if isinstance(before, dict):
                self.starts = int(before.get("starts", 1)) + 1
            self._record(
                study,
                state="running",
                host=socket.gethostname(),
                pid=os.getpid(),
                machine=this_machine(),
                started=_now(),
                starts=self.starts,
            )
        self.reporter.start(self.project, study.name, self.engine, self.budget)
        self.reporter.note(f"worker {self.id} joined {study.name}")
        for option, (value, kept) in set_aside.items():
            # taken by the worker that created the study: said, not silently set aside
            flag, what = JOIN_OPTIONS[option]
            keeps = (
                f"keeps the {what} {kept} it was created with"
                if kept is not None
                else f"was created without a {what}"
            )
            self.reporter.warn(f"--{flag} {value} not used: {study.name} {keeps}")
        if unused:
            self.reporter.warn(
                f"tuning: {', '.join(unused)} of this project file not used: {study.name} "
                "keeps the settings it was created with"
            )
        if differ:
            self.reporter.warn(rules_warning(differ, study.name))
        return study

    def _take_settings(self, study: StudyRecord) -> tuple[dict[str, tuple[Any, Any]], list[str]]:
        """Run by the settings the study records, as a resumed study does, over this worker's
        command and project file: a worker started later, from a project file edited since or
        with another --seed, would search and confirm the shared study differently. Returns
        the options this worker's command gave otherwise, (given, kept) by option, and the
        `tuning:` keys of its project file that differ from the study's (the options given
        aside: their own warning says so)."""
        attrs = study.attrs
        recorded = {
            **(attrs.get("tuning") or {}),
            **{key: attrs[key] for key in ("engine", "budget", "apply") if attrs.get(key)},
        }
        given = {option: getattr(self.options, option) for option in JOIN_OPTIONS}
        mine = _flat(self._settings())
        # a study recorded before it kept a setting: this worker's own goes on
        self.options = replace(self.options, **{k: None for k in given if k in recorded})
        self._keep_settings(study)
        theirs = _flat(self._settings())
        unused = [
            TUNING_KEYS[key]
            for key in TUNING_KEYS
            if given.get(key) is None and mine[key] != theirs[key]
        ]
        kept = {
            "engine": self.engine,
            "budget": self.budget,
            "apply": self.apply_policy,
            "seed": self.search_seed,
            "baseline_repeats": self.baseline_repeats,
        }
        set_aside = {
            option: (value, kept[option])
            for option, value in given.items()
            if value is not None and option in recorded and str(value) != str(kept[option])
        }
        return set_aside, list(dict.fromkeys(unused))

    def _shared_study(self, wanted: str) -> StudyRecord | None:
        """The study `--study` names, else the project's newest running shared study."""
        studies = self.store.studies()
        if self.worker_options.study:
            named = [s for s in studies if s.name == wanted]
            if not named:
                raise HoneError(f"no study named {wanted!r} in {self.store.shown}")
            if not (named[0].attrs.get("workers") and named[0].state == RUNNING):
                raise HoneError(f"study {wanted} is not a running study of workers")
            return named[0]
        shared = [
            s
            for s in studies
            if s.project == wanted and s.attrs.get("workers") and s.state == RUNNING
        ]
        return max(shared, key=lambda s: s.study_id) if shared else None

    def _study_attrs(self) -> dict[str, Any]:
        return {
            **self._settings(),  # what every worker that joins takes (_take_settings)
            "workers": True,
            # every score is a gain in % over its own worker's baseline
            "scores": "relative",
            "baseline_score": 0.0,
            **project_attrs(self.project),
        }

    def _cut_off_predecessor(self, study: StudyRecord) -> None:
        """A trial still running under this worker's name: from an earlier process of this
        worker that was killed (failed now), or from a live worker using the same name."""
        mine = [t for t in running_trials(self.store, study.study_id) if t.worker == self.id]
        if not mine:
            return
        before = study.attrs.get(f"worker:{self.id}") or {}
        # its pid says whether it is gone only on this machine: the name (a host name by
        # default) may be another machine's too, cloned or a container's, whose worker lives
        here = isinstance(before, dict) and on_this_machine(before)
        dead = here and not pid_alive(before.get("pid"))
        for trial in mine:
            lease = trial.lease or self.worker_options.lease
            if not dead and trial.silent <= lease:
                # elsewhere: another machine of that name, or this one before a reboot (whose
                # worker is gone, but nothing here can tell: its lease will)
                where = (
                    ""
                    if here
                    else f" on another machine (host {before.get('host')}), or before a reboot"
                    f" of this one (then its lease ends in {lease - trial.silent:.0f} s)"
                )
                raise HoneError(
                    f"worker {self.id} is already running trial #{trial.number} of "
                    f"{study.name}{where}; give each worker its own --worker-id"
                )
            self.store.fail_trial(trial.trial_id, CUT_OFF, lost=True)

    # -- proposals -------------------------------------------------------------------------

    def _claim(
        self, study: StudyRecord, space: SearchSpace
    ) -> tuple[int, int, Config] | str | None:
        """Fail lost trials, learn every finished one and propose the next configuration given
        those running elsewhere, then start its trial under the study's lock. WAIT when the
        budget is spent but search trials still run; None when the search is over.

        The proposal is made outside the lock, from a look at the study; under the lock only
        the trials started since are read: if one of them runs the same configuration, or
        they may have spent the budget, the proposal is made again there with a fresh look.
        Workers whose trials end together so queue for the trial's creation alone, not for
        each other's reading and optimiser (what kept 4 workers in step waiting)."""
        self._reap(study)  # outside the lock: a lost trial is failed once, by whoever is first
        trials = read_trials(self.store, study)
        proposal = self._propose(study, space, trials)
        if not isinstance(proposal, dict):
            return proposal  # a finished search trial stays counted: no need to lock
        seen = max((t.number for t in trials), default=-1)
        counted = sum(t.phase == "search" and _counts(t) for t in trials)
        with study_locked(self.store, f"study:{study.study_id}"):
            since = started_since(self.store, study.study_id, seen)
            taken = {space.key(config) for config in since}
            if counted + len(since) >= self.budget or space.key(proposal) in taken:
                trials = read_trials(self.store, study)
                proposal = self._propose(study, space, trials)
                if not isinstance(proposal, dict):
                    return proposal
                counted, since = sum(t.phase == "search" and _counts(t) for t in trials), []
            trial_id = self._start_trial(study, space, proposal, "search")
        return trial_id, counted + len(since) + 1, proposal

    def _propose(
        self, study: StudyRecord, space: SearchSpace, trials: list[TrialRecord]
    ) -> Config | str | None:
        """Tell the optimiser the search trials finished since it last looked, and ask for
        one configuration given the running ones; WAIT or None once the budget is spent."""
        counted = [t for t in trials if t.phase == "search" and _counts(t)]
        running = [t for t in trials if t.state == "running" and t.phase == "search"]
        if len(counted) >= self.budget:
            return WAIT if running else None
        for trial in counted:
            if trial.state != "running" and trial.number not in self.told:
                score = trial.score if trial.state == "complete" else None
                self.optimizer.tell(trial.config, -score if score is not None else None)
                self.told.add(trial.number)
        finished = sum(t.state != "running" for t in counted)
        selector = self.tuning.feature_filter
        if not isinstance(self.optimizer, select.Narrowed) and select.due(
            selector, self.budget, finished, space
        ):
            selection = self._selection(study, space, selector.count)  # type: ignore[union-attr]
            self.reporter.note(select.kept_note(selection))
            self.optimizer = select.narrow(
                self.engine, self.optimizer, space, selection, seed=self.seed, budget=self.budget
            )
        return self.optimizer.ask_batch(1, pending=[t.config for t in running])[0]

    def _selection(self, study: StudyRecord, space: SearchSpace, count: int) -> dict[str, Any]:
        """The study's selection of knobs: the one stored by the first worker to get there,
        else made here and stored, under the study's lock, so every worker keeps the same."""
        with study_locked(self.store, f"study:{study.study_id}"):
            stored = self.store.storage.get_study_user_attrs(study.study_id).get(select.KEY)
            if stored:
                return stored
            selection = select.choose(space, self.optimizer, count)
            self.store.update(study, **{select.KEY: selection})
            return selection

    def _reap(self, study: StudyRecord) -> None:
        """Fail the trials whose worker stopped renewing its lease, with the reason."""
        for stale in running_trials(self.store, study.study_id):
            # judged by the lease its own worker holds it with: a worker given a longer
            # --lease beats less often, and is not lost for it
            lease = stale.lease or self.worker_options.lease
            # silent only while this worker could see: after an outage, the others' heartbeats
            # get a lease's time to resume before their trials are judged lost
            if min(stale.silent, self.outage.since_contact()) <= lease:
                continue
            reason = LOST.format(worker=stale.worker or "?", silent=stale.silent)
            if self.store.fail_trial(stale.trial_id, reason, lost=True):
                self.reporter.warn(f"trial #{stale.number}: {reason}")
                if stale.worker:
                    self._mark(study, stale.worker, state="lost", error=reason)

    # -- the end: one worker confirms, every worker applies --------------------------------

    def _end(self, study: StudyRecord, space: SearchSpace, baseline: Config) -> dict[str, Any]:
        """Wait for the study's decision, making it if this worker is elected: the first to
        take the study's confirm lock, which the database releases if its holder dies (a
        waiting worker then takes over). Then the winner goes on this machine, or the knobs
        go back."""
        # this machine at its originals while the winner is decided (a workload hone owns,
        # stopped at the end, is not restarted for them)
        serve = not self.system.owns_workload
        self.system.apply(baseline, serve=serve)
        decision = self._db(self._decision, study)
        while decision is None:
            decision = self._db(self._elect, study, space, baseline)
            if decision is not None:
                break
            self._db(self._reap_locked, study)  # a confirmer killed mid-trial: failed, lost
            time.sleep(POLL)
            decision = self._db(self._decision, study)
        best = decision.get("best")
        if decision.get("outcome") == "applied" and best:
            self.system.apply(best, serve=serve)
            self.journal.end("applied")
            self.reporter.note(f"the study's winner applied on this machine: {decision['reason']}")
        else:
            self.system.restore()
        return decision

    def _elect(
        self, study: StudyRecord, space: SearchSpace, baseline: Config
    ) -> dict[str, Any] | None:
        """The decision, made here if this worker takes the confirm lock; None if another
        worker holds it, or if this worker lost it while cut off from the database (its
        confirmation is abandoned: a successor may have started its own)."""
        with try_locked(self.store, f"confirm:{study.study_id}") as held:
            if held is None:
                return None
            self.confirm_held = held
            try:
                return self._decision(study) or self._confirm_winner(study, space, baseline)
            except ConfirmLost:
                self._abandon_confirmation(study, baseline)
                return None
            finally:
                self.confirm_held = None

    def _abandon_confirmation(self, study: StudyRecord, baseline: Config) -> None:
        reason = ABANDONED.format(worker=self.id)
        self.reporter.warn(reason)
        if self.heart.trial_id is not None:
            self._db(self.store.fail_trial, self.heart.trial_id, reason, lost=True)
            self.heart.trial_id = None
        self.system.apply(baseline)
        self._record(study, confirming=False)

    def _holds_confirm_lock(self) -> None:
        """Before a confirming worker writes: the lock that makes it the only confirmer is
        still its own (a restart of the database server releases it)."""
        if self.confirm_held is not None and not self.confirm_held():
            raise ConfirmLost("the confirm lock went with the connection to the database")

    def _reap_locked(self, study: StudyRecord) -> None:
        with study_locked(self.store, f"study:{study.study_id}"):
            self._reap(study)

    def _decision(self, study: StudyRecord) -> dict[str, Any] | None:
        attrs = self.store.storage.get_study_user_attrs(study.study_id)
        result = attrs.get("result")
        return result if attrs.get("state") == FINISHED and isinstance(result, dict) else None

    def _confirm_winner(
        self, study: StudyRecord, space: SearchSpace, baseline: Config
    ) -> dict[str, Any]:
        """As `hone tune` ends: the best few search configurations of every worker, measured
        here in rounds interleaved with this machine's baseline, and the decision by the
        study's apply policy. Stored in the study, which ends."""
        self.reporter.note(f"worker {self.id} confirms the best configurations of the study")
        self._record(study, confirming=True)
        for stale in self._db(running_trials, self.store, study.study_id):
            # this lock was free: whoever confirmed before is gone, its trial with it
            if stale.worker != self.id:
                reason = SUPERSEDED.format(worker=stale.worker or "?")
                closed = self._db(self.store.fail_trial, stale.trial_id, reason, lost=True)
                if closed and stale.worker:
                    self._mark(study, stale.worker, state="lost", error=reason, confirming=False)
        candidates = self._candidates(study, space, baseline, None)
        metrics: dict[int, list[dict[str, float]]] = defaultdict(list)
        choice, rounds = Choice(None, None, []), 0
        if candidates:
            choice, rounds = self._confirm(study, space, baseline, candidates, metrics)
        outcome, reason = self._decide(choice)
        trials = self._db(read_trials, self.store, study)
        best_search, best_search_gain = _best([t for t in trials if t.phase == "search"])
        decision = {
            "outcome": outcome,
            "reason": reason,
            "best": choice.best,
            "gain": gain_dict(choice.gain),
            "risk": choice.record(),
            "confirm_rounds": rounds,
            "confirmed_by": self.id,
            "best_search": best_search,
            "best_search_gain": best_search_gain,
            "trials": len(trials),
            "failures": sum(t.state == "fail" for t in trials),
            "lost": sum(t.lost for t in trials),
        }
        self._db(self._store_decision, study, decision)
        self._record(study, confirming=False)
        return decision

    def _store_decision(self, study: StudyRecord, decision: dict[str, Any]) -> None:
        """Checked again on every try: a lock lost in an outage is not written through."""
        self._holds_confirm_lock()
        self.store.update(study, state=FINISHED, result=decision)

    # -- trials ----------------------------------------------------------------------------

    def _measure_baseline(
        self, study: StudyRecord, space: SearchSpace, baseline: Config
    ) -> list[Measurement]:
        """This machine's baseline: its raw scores set the zero of every score it stores."""
        self.reporter.phase("baseline", self.baseline_repeats)
        self.system.apply(baseline)
        measured = self._baseline_readings(study, space, baseline, self.baseline_repeats)
        if not measured:
            raise BenchmarkError(f"every baseline run failed; the last: {self.last_error}")
        self.objective.set_baseline([run.metrics for _, run in measured])
        raw = [self.objective.score(run.metrics) for _, run in measured]
        self.base_score = float(np.mean(raw))
        for trial_id, run in measured:
            run.score = self._score(run.metrics)
            self._finish_trial(trial_id, run)
        cv = score_noise(raw, self.objective.single is None)
        self._record(
            study,
            baseline_metrics=self.objective.baseline,
            baseline_score=self.base_score,
            baseline_cv=cv,
        )
        self.reporter.baseline(self.objective.baseline, cv, len(raw), lambda s: s)
        return [run for _, run in measured]

    def _score(self, metrics: Any) -> float:
        """The gain over this worker's own baseline, in percent."""
        return self.objective.gain(self.objective.score(metrics), self.base_score)

    def _start_trial(
        self, study: StudyRecord, space: SearchSpace, config: Config, phase: str, **attrs: Any
    ) -> int:
        self._holds_confirm_lock()
        self.system.count_trial()
        trial_id = self._db(self._create_trial, study, space, config, phase, attrs)
        self.heart.trial_id = trial_id
        return trial_id

    def _create_trial(
        self, study: StudyRecord, space: SearchSpace, config: Config, phase: str, attrs: Any
    ) -> int:
        with study_locked(self.store, f"study:{study.study_id}"):  # trial numbers stay unique
            return self.store.start_trial(
                study,
                space,
                config,
                phase,
                lease=True,
                worker=self.id,
                lease_seconds=self.worker_options.lease,
                **attrs,
            )

    def _finish_trial(self, trial_id: int, run: Measurement, phase: str | None = None) -> None:
        self._holds_confirm_lock()
        try:
            super()._finish_trial(trial_id, run, phase)
        except TrialClosed:
            # cut off from the database longer than the lease: another worker failed it, and
            # the study counts it failed; so does this worker's summary (a failed run already is)
            if not run.error:
                self.failures += 1
            run.error = "dropped: the study gave this trial up while the worker was cut off"
            self.reporter.warn(run.error)
        finally:
            self.heart.trial_id = None

    def _db(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """The call, tried again while the shared database does not answer (`--db-wait`)."""
        return self.outage.call(call, *args, **kwargs)

    # -- records ---------------------------------------------------------------------------

    def _record(self, study: StudyRecord, **fields: Any) -> None:
        """This worker's entry in the study: host, pid, state, baseline."""
        self.record.update(fields)
        self._db(self._write_record, study)

    def _write_record(self, study: StudyRecord) -> None:
        self.store.storage.set_study_user_attr(study.study_id, f"worker:{self.id}", self.record)

    def _mark(self, study: StudyRecord, worker: str, **fields: Any) -> None:
        self._db(self._write_mark, study, worker, fields)

    def _write_mark(self, study: StudyRecord, worker: str, fields: dict[str, Any]) -> None:
        key = f"worker:{worker}"
        record = dict(self.store.storage.get_study_user_attrs(study.study_id).get(key) or {})
        self.store.storage.set_study_user_attr(study.study_id, key, {**record, **fields})

    def _abort(self, study: StudyRecord, exc: BaseException) -> bool:
        """Knobs back and owned workload stopped first; then the trial it was running is
        failed with the reason and the worker marked stopped (the study goes on without it).
        Returns whether every knob is back."""
        back = self.system.put_back(exc)
        if isinstance(exc, DatabaseLost):
            return back  # nothing to record it in: the others fail its trial when its lease ends
        stopped = isinstance(exc, Stopped | KeyboardInterrupt)
        reason = CUT_OFF if stopped else f"worker {self.id} stopped: {first_line(exc)}"
        try:  # once, not waiting for the database: the knobs are back, the worker ends
            if self.heart.trial_id is not None:
                self.store.fail_trial(self.heart.trial_id, reason, lost=True)
            self.record.update(state="stopped", error=reason[:300])
            self._write_record(study)
        except Exception as record_error:
            # in the database's words: Optuna's own blames "invalid data in the commit"
            self.reporter.warn(
                f"the worker's end could not be recorded: {first_line(record_error)}"
            )
        return back

    def _result(self, study: StudyRecord) -> WorkerResult:
        trials = self._db(read_trials, self.store, study)
        best, gain = _best([t for t in trials if t.phase == "search"])
        if self.decision.get("best"):
            best, gain = self.decision["best"], (self.decision.get("gain") or {}).get("mean")
        attrs = self._db(self.store.storage.get_study_user_attrs, study.study_id)
        state = attrs.get("state", RUNNING)
        return WorkerResult(
            study=study.name,
            worker=self.id,
            trials=self.system.iteration,
            failures=self.failures,
            study_state=str(state),
            best=best,
            best_gain=gain,
            elapsed=time.monotonic() - self.started,
            outcome=str(self.decision.get("outcome", "restored")),
            reason=str(self.decision.get("reason", "")),
        )


class ConfirmLost(Exception):
    """The confirming worker no longer holds the study's confirm lock."""


def _require_same_project(study: StudyRecord, mine: dict[str, Any]) -> None:
    """Refuse to join a study whose knobs, ranges or metrics differ from this worker's
    project: its proposals would fall outside the others' ranges, and its scores would be
    gains in another objective than theirs."""
    differences = []
    mine = json.loads(json.dumps(mine))  # as the study holds it: lists, not tuples
    theirs, ours = study.attrs.get("space") or {}, mine["space"]
    for name in sorted(set(theirs) | set(ours)):
        if name not in ours:
            differences.append(f"knob {name} is not in this project")
        elif name not in theirs:
            differences.append(f"knob {name} is not in the study")
        elif theirs[name] != ours[name]:
            was, now = study.attrs.get("knobs", {}).get(name), mine["knobs"][name]
            differences.append(f"knob {name} is {now} here but {was} in the study")
    if _objective(study.attrs.get("metrics") or []) != _objective(mine["metrics"]):
        differences.append("its metrics (names, directions or weights) differ")
    if differences:
        raise HoneError(
            f"study {study.name} runs another project than this one: {differences[0]}; every"
            " worker of a study needs the same knobs, ranges and metrics (docs/scale.md)"
        )


def _objective(metrics: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
    return {(m.get("name"), m.get("direction"), m.get("weight")) for m in metrics}


def _flat(settings: dict[str, Any]) -> dict[str, str]:
    """A run's recorded settings (Tuner._settings) as one JSON text by key, to compare."""
    flat = {key: settings[key] for key in ("engine", "budget", "apply")}
    flat.update(settings["tuning"])
    return {key: json.dumps(value, sort_keys=True) for key, value in flat.items()}


def _counts(trial: TrialRecord) -> bool:
    """Whether a search trial uses the budget: a lost or cut-off one measured nothing."""
    return not trial.lost and trial.error != CUT_OFF


def _config_key(config: Config) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in config.items()))


def _best(trials: list[TrialRecord]) -> tuple[Config | None, float | None]:
    """The configuration with the best mean gain over the finished search trials."""
    gains: dict[tuple, list[float]] = defaultdict(list)
    configs: dict[tuple, Config] = {}
    for trial in trials:
        if trial.state == "complete" and trial.score is not None:
            key = _config_key(trial.config)
            gains[key].append(trial.score)
            configs[key] = trial.config
    if not gains:
        return None, None
    top = max(gains, key=lambda k: float(np.mean(gains[k])))
    return configs[top], round(float(np.mean(gains[top])), 3)
