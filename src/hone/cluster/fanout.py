"""Applying a trial's values on every host of each knob's group at once.

Before the first change every host's original values are read (one ssh call per host) and
journaled with fsync in that host's own journal. A change is a convergence per host, all hosts in
parallel: write what differs from what was last read there, read it back (one ssh call). When any
host fails, every host is brought back to the values it had before this change, from a fresh read
(only what differs is written, so a host that changed nothing is left alone), and the change
fails naming the host. A knob that needs a restart restarts its group's workload on the hosts
where it was written; a failed restart is rolled back the same way, and those hosts restart
again on their previous values."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from hone.cluster.fence import TAKEN_OVER, Fence
from hone.cluster.remote import RemoteKnob, remote_knob, run_steps
from hone.cluster.ssh import Host
from hone.cluster.workload import HostWorkload, is_ready, restart, start, stop
from hone.errors import ActuationError, HoneError
from hone.journal import Journal
from hone.knobs import Actuator
from hone.knobs.remote import RemoteActuator


@dataclass
class GroupKnob:
    """A knob of the project put on a host group."""

    name: str
    actuator: Actuator
    hosts: list[Host]
    group: str = ""
    #: A new value takes effect once the group's workload restarts on the host.
    restart: bool = False


class Cluster:
    """The hosts of a project, the knobs each holds, their journals and last known values."""

    def __init__(
        self,
        project: str,
        knobs: Iterable[GroupKnob],
        workloads: dict[str, HostWorkload] | None = None,
        others: Iterable[Host] = (),
    ) -> None:
        self.project = project
        self.knobs = list(knobs)
        groups = {k.group for k in self.knobs}
        #: The workloads of the groups that hold knobs (only those are ever restarted).
        self.workloads = {g: w for g, w in (workloads or {}).items() if g in groups}
        self.hosts: dict[str, Host] = {h.name: h for k in self.knobs for h in k.hosts}
        #: The hosts the run reaches that hold no knob (the benchmark's, a metric's).
        self.others = {h.name: h for h in others if h.name not in self.hosts}
        self.remote: dict[str, RemoteKnob] = {k.name: remote_knob(k.actuator) for k in self.knobs}
        self.on_host: dict[str, list[str]] = {
            h: [k.name for k in self.knobs if any(x.name == h for x in k.hosts)] for h in self.hosts
        }
        self.journals = {h: Journal.for_project_host(project, h) for h in self.hosts}
        #: host -> knob -> the value last read or verified there.
        self.current: dict[str, dict[str, str]] = {h: {} for h in self.hosts}
        #: host -> resource -> its text as last read there (a later write of a whole file
        #: checks the file still holds it): a trial costs one ssh call per host.
        self.raw: dict[str, dict[str, str]] = {h: {} for h in self.hosts}
        #: (host, group) pairs whose workload this run has journaled as restarting.
        self.marked: set[tuple[str, str]] = set()
        #: This run's claim on the hosts: its writes are refused once another process (a
        #: restore after this run was killed) took a host over.
        self.fence = Fence(project)

    def actuators(self) -> list[Actuator]:
        """One actuator per knob and host (for the setting locks and the journal)."""
        return [RemoteActuator(h.spec(), k.actuator.spec()) for k in self.knobs for h in k.hosts]

    # -- before the first change -----------------------------------------------------------

    def prepare(self) -> None:
        """Connect to every host (those that hold no knob too), read every knob there and
        journal what is not journaled; once every host is journaled, start the groups'
        workloads that are down. A host that fails stops the run here: the journals this call
        began on the other hosts are set aside (and what it started there stopped), since
        values kept from a run that changed nothing would later be written back over whatever
        the hosts hold by then."""
        fresh = [name for name, journal in self.journals.items() if not journal.records()]
        names = list(self.hosts)

        def reach(name: str) -> None:
            if name in self.others:
                self.others[name].connect()  # a host the run needs that holds no knob
            else:
                self._prepare_host(self.hosts[name])

        failures = parallel(reach, [*names, *self.others])
        if not failures:
            failures = parallel(lambda name: self._prepare_workloads(self.hosts[name]), names)
        if failures:
            for name in fresh:
                self._forget(name)
            raise ActuationError(failures[sorted(failures)[0]])

    def _prepare_host(self, host: Host) -> None:
        host.connect()
        self.fence.take(host)
        names = self.on_host[host.name]
        values = self._read(host, names, self.raw[host.name])
        self.current[host.name] = dict(values)
        journal = self.journals[host.name]
        actuators = [(n, RemoteActuator(host.spec(), self._knob(n).actuator.spec())) for n in names]
        # an original recorded for another setting (the knob now edits another file or key)
        # is refused, as for a knob on this machine; a new way to reach the host is not that
        known = {n for n, a in actuators if journal.original_of(n, a) is not None}
        journal.reconnect(actuators)
        new = [(n, a, values[n]) for n, a in actuators if n not in known]
        for name, actuator, value in new:
            try:
                actuator.check_value(value)
            except ActuationError as exc:
                raise ActuationError(f"knob {name} on {host.name}: {exc.message}") from None
        journal.remember_values(new)

    def _prepare_workloads(self, host: Host) -> None:
        journal = self.journals[host.name]
        for group in self._groups_of(host.name):
            workload = self.workloads[group]
            running = is_ready(host, workload)
            journal.remember_workload(group, host.spec(), workload.spec(), running)
            if not running:  # started for the run; `restore` stops it again
                start(host, workload, self.fence)

    def _forget(self, name: str) -> None:
        """Set aside a host journal that a failed `prepare` began: its workloads this run
        started are stopped (a host where that fails keeps the journal for `hone restore`)."""
        journal = self.journals[name]
        try:
            for group, record in journal.workloads().items():
                if not record["running"]:
                    stop(self.hosts[name], self.workloads[group])
        except HoneError:
            return
        journal.archive()

    def _groups_of(self, host: str) -> list[str]:
        """The groups with a workload that this host belongs to."""
        return sorted(
            {k.group for k in self.knobs if k.group in self.workloads}
            & {k.group for k in self.knobs if any(h.name == host for h in k.hosts)}
        )

    def baseline(self) -> dict[str, str]:
        """Each knob's value before tuning: its first host's journaled original."""
        result = {}
        for knob in self.knobs:
            first = knob.hosts[0].name
            result[knob.name] = self.journals[first].originals()[knob.name].value
        return result

    # -- changes ---------------------------------------------------------------------------

    def apply(self, values: dict[str, str], originals: bool = False) -> set[str]:
        """Set these knobs on every host of their groups; all or nothing. With `originals`
        (the baseline) each host gets its own original of each knob instead, as hosts of a
        group may start different; otherwise every host gets the value, also one that is some
        host's original. Where a knob that needs a restart was written, the group's workload
        restarts on that host (only there) and must be ready again. Returns the hosts
        restarted."""
        targets = {
            h: {
                n: self.journals[h].originals()[n].value if originals else v
                for n, v in values.items()
                if n in self.on_host[h]
            }
            for h in self.hosts
        }
        targets = {h: t for h, t in targets.items() if t}
        for name in targets:
            self.journals[name].require_on_disk()
        before = {h: {n: self.current[h].get(n) for n in t} for h, t in targets.items()}
        written: dict[str, set[str]] = {}

        def converge(h: str) -> None:
            written[h] = self._converge(h, targets[h])

        failures = parallel(converge, list(targets))
        restarts = {} if failures else self._restarts(written)
        if not failures:
            failures = parallel(lambda h: self._restart(h, restarts[h]), list(restarts))
            if not failures:
                return set(restarts)
        back = {h: {n: v for n, v in b.items() if v is not None} for h, b in before.items()}
        undone = parallel(lambda h: self._converge(h, back[h], fresh=True), list(back))
        if not undone:  # a host restarted on the new values runs the old ones again
            undone = parallel(lambda h: self._restart(h, restarts[h]), list(restarts))
        first = next(iter(failures.values()))
        hosts = ", ".join(sorted(failures))
        if undone:
            raise HoneError(
                f"{hosts}: {first}; and the roll-back failed on {', '.join(sorted(undone))}: "
                f"{next(iter(undone.values()))}"
            )
        raise ActuationError(f"{hosts}: {first}; every host rolled back to its previous values")

    def _restarts(self, written: dict[str, set[str]]) -> dict[str, list[str]]:
        """host -> the groups whose workload must restart there: a knob of the group that
        needs a restart was written on that host."""
        found: dict[str, list[str]] = {}
        for host, names in written.items():
            groups = {k.group for k in self.knobs if k.name in names and k.restart} & set(
                self.workloads
            )
            if groups:
                found[host] = sorted(groups)
        return found

    def _restart(self, host_name: str, groups: list[str]) -> None:
        host = self.hosts[host_name]
        for group in groups:
            if (host_name, group) not in self.marked:
                self.journals[host_name].mark_restarting(group)
                self.marked.add((host_name, group))
            restart(host, self.workloads[group], self.fence)

    def _converge(self, host_name: str, targets: dict[str, str], fresh: bool = False) -> set[str]:
        """Write what differs from what was last read there, and read it back: one ssh call
        (two when a resource must be read first: `fresh`, or not read yet). Returns the knobs
        whose resource was written."""
        host = self.hosts[host_name]
        knobs = {n: self.remote[n] for n in targets}
        resources = {k.resource.key: k.resource for k in knobs.values()}
        raws = self.raw[host_name]
        if fresh or any(key not in raws for key in resources):
            raws.update(self._raw(host, list(resources.values())))
        changed: dict[str, str] = {}
        for name, wanted in targets.items():
            knob = knobs[name]
            key = knob.resource.key
            if key not in changed and knob.same(knob.value(raws[key]), wanted):
                self.current[host_name][name] = wanted
                continue
            knob.actuator.check_value(wanted)
            changed[key] = knob.edit(changed.get(key, raws[key]), wanted)
        if not changed:
            return set()
        for name in targets:
            if knobs[name].resource.key in changed:
                self.current[host_name].pop(name, None)  # unknown until read back
        writes = [
            resources[key].write_step(raw, raws[key] if resources[key].whole_file else None)
            for key, raw in changed.items()
        ]
        for key in changed:
            del raws[key]  # unknown until read back
        reads = [resources[key].read for key in changed]
        fence, *steps = run_steps(
            host, [self.fence.check(), *writes, *reads], stop_at_failure=True, lock=self.fence.lock
        )
        if not fence.ok:
            raise ActuationError(f"nothing written: {TAKEN_OVER}", key=host.where())
        for key, step in zip(changed, steps, strict=False):
            if not step.ok:
                raise ActuationError(f"cannot set {key}: {step.text}", key=host.where())
        back = dict(zip(changed, (s.text for s in steps[len(writes) :]), strict=False))
        raws.update(back)
        for name, wanted in targets.items():
            key = knobs[name].resource.key
            if key not in changed:
                continue
            if key not in back:
                raise ActuationError(f"{key} could not be read back", key=host.where())
            actual = knobs[name].value(back[key])
            if not knobs[name].same(actual, wanted):
                raise ActuationError(
                    f"knob {name}: wrote {wanted!r} but reads back {actual!r}", key=host.where()
                )
            self.current[host_name][name] = wanted
        return {n for n in targets if knobs[n].resource.key in changed}

    # -- reading ---------------------------------------------------------------------------

    def _read(self, host: Host, names: list[str], raws: dict[str, str]) -> dict[str, str]:
        """The knobs' values on the host; `raws` receives the resources' texts."""
        resources = {self.remote[n].resource.key: self.remote[n].resource for n in names}
        raws.update(self._raw(host, list(resources.values())))
        return {n: self.remote[n].value(raws[self.remote[n].resource.key]) for n in names}

    def _raw(self, host: Host, resources: list) -> dict[str, str]:
        steps = run_steps(host, [r.read for r in resources], stop_at_failure=False)
        raws = {}
        for resource, step in zip(resources, steps, strict=True):
            if not step.ok:
                raise ActuationError(f"cannot read {resource.key}: {step.text}", key=host.where())
            raws[resource.key] = step.text
        return raws

    def _knob(self, name: str) -> GroupKnob:
        return next(k for k in self.knobs if k.name == name)


def parallel(work: Callable[[str], None], names: list[str]) -> dict[str, str]:
    """Call `work(name)` for every name in threads; name -> error text for each that failed."""
    if not names:
        return {}

    def one(name: str) -> str | None:
        try:
            work(name)
        except HoneError as exc:
            return str(exc)
        return None

    with ThreadPoolExecutor(max_workers=min(32, len(names))) as pool:
        results = list(pool.map(one, names))
    return {n: r for n, r in zip(names, results, strict=True) if r is not None}
