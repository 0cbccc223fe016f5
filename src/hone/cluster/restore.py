"""`hone restore` of a cluster project: the project's own journal, then every host's journal,
all hosts at once. A host that cannot be reached keeps its journal (the others are archived), so
running restore again once it is back finishes the job. A host whose workload hone restarted
gets it restarted once its originals are back, so it runs them again."""

from __future__ import annotations

import os
from dataclasses import dataclass

from hone.cluster.fanout import parallel
from hone.cluster.fence import Fence
from hone.cluster.ssh import Host
from hone.cluster.workload import HostWorkload, restart, stop
from hone.errors import HoneError
from hone.journal import Journal, RestoreOutcome
from hone.workload.manager import service

#: The journal's name for this machine's workload run by commands, and its restore line.
SERVICE = "service"
SERVICE_OUTCOME = "workload"


@dataclass(frozen=True)
class HostOutcome:
    host: str  # "" for this machine
    outcome: RestoreOutcome


def restore_project(name: str, journal: Journal | None = None) -> list[HostOutcome]:
    """Put back every knob of the project on this machine and on every host it touched. Asked
    by name (`hone restore`, not a run's own journal), a damaged line is named, not fatal."""
    main = journal or salvaging(Journal.for_project(name))
    with main.locked():
        # restored even with no originals of its own: its `begin` would else read as a run
        # that never finished
        here = (
            main.restore(after=lambda: settle_service(main))
            if main.records() or main.unreadable
            else []
        )
        results = [HostOutcome("", o) for o in here]
        journals = {_host_name(j): salvaging(j) for j in Journal.for_project_hosts(name)}
        found: dict[str, list[RestoreOutcome]] = {}

        def one(host: str) -> None:
            journal = journals[host]
            unreached = _reach(journal, name)
            if unreached is not None:  # every knob fails alike: said at once, journal kept
                found[host] = _not_reached(journal, unreached)
                return
            found[host] = journal.restore(after=lambda: settle_workloads(journal))

        failed = parallel(one, list(journals))
        for host in sorted(journals):
            if host in failed:
                results.append(HostOutcome(host, RestoreOutcome("*", "", failed[host])))
            results.extend(HostOutcome(host, o) for o in found.get(host, []))
    return results


def settle_service(journal: Journal) -> list[RestoreOutcome]:
    """Once this machine's originals are back, its workload run by commands as it should be:
    a service hone restarted is restarted again, so it runs them, not the values it last read;
    one hone ran for itself (not `keep_running`) is stopped when the run that started it died
    (a live run, this process, stops it itself)."""
    record = journal.workloads().get(SERVICE)
    if record is None or not record.get("restarted"):
        return []
    run = journal.unfinished()
    if not record["running"] and (run is None or run.get("pid") == os.getpid()):
        return []
    manager = service(record["spec"])
    done = "restarted" if record["running"] else "stopped"
    try:
        if record["running"]:
            manager.restart()
        else:
            manager.stop()
    except HoneError as exc:
        return [RestoreOutcome(SERVICE_OUTCOME, done, str(exc), workload=True)]
    return [RestoreOutcome(SERVICE_OUTCOME, done, workload=True)]


def settle_workloads(journal: Journal) -> list[RestoreOutcome]:
    """Once a host's originals are back: a workload hone restarted there is restarted again
    (it runs the original values), one hone started (it was down) is stopped."""
    outcomes = []
    for group, record in sorted(journal.workloads().items()):
        name = f"workload {group}"
        if record["running"] and not record.get("restarted"):
            continue
        try:
            host = Host.from_spec(record["host"])
            workload = HostWorkload.from_spec(record["spec"])
            if record["running"]:
                restart(host, workload)
            else:
                stop(host, workload)
        except (HoneError, TypeError, KeyError) as exc:
            outcomes.append(RestoreOutcome(name, "", str(exc), workload=True))
            continue
        done = "restarted" if record["running"] else "stopped"
        outcomes.append(RestoreOutcome(name, done, workload=True))
    return outcomes


def has_changes(name: str) -> bool:
    """Whether `hone restore` has anything to do: an original recorded, a run that never
    finished, or a damaged line to name."""
    journals = [Journal.for_project(name), *Journal.for_project_hosts(name)]
    for journal in map(salvaging, journals):
        if journal.has_changes() or journal.unreadable or journal.unfinished() is not None:
            return True
    return False


def salvaging(journal: Journal) -> Journal:
    """The journal, read past its damaged lines (a restore names them instead of refusing)."""
    journal.salvage = True
    return journal


def _host_name(journal: Journal) -> str:
    return journal.path.stem.rsplit("@", 1)[1]


def _reach(journal: Journal, project: str) -> str | None:
    """One master connection before the knob-by-knob restore (else a handshake per call), and
    one script through it that takes the host over (fence.py: a write of a run killed with -9
    still under way there finishes first, one still on its way is refused): a host that is
    down or hangs (a master still up while the host's sshd stopped answering) is found once,
    instead of once per knob and step, each after ssh's timeouts (tens of seconds a knob).
    Returns why the host cannot be reached or taken over."""
    originals = list(journal.originals().values())
    if not originals or originals[0].spec.get("kind") != "remote":
        return None
    try:
        host = Host.from_spec(originals[0].spec["host"])
    except (TypeError, KeyError):
        return None  # a bad record: each knob fails on it with its own reason
    try:
        host.connect()
        Fence(project).take(host)
    except HoneError as exc:
        return str(exc)
    return None


def _not_reached(journal: Journal, reason: str) -> list[RestoreOutcome]:
    """A failed outcome for every original of a host that cannot be reached (and for each
    damaged line): nothing is written there, and its journal stays for the next restore."""
    originals = list(journal.originals().values())  # read first: it finds the damaged lines
    damaged = [
        RestoreOutcome(f"{journal.path}:{number}", text[:80], "this line is damaged")
        for number, text in journal.unreadable
    ]
    return damaged + [RestoreOutcome(o.name, o.value, reason) for o in reversed(originals)]
