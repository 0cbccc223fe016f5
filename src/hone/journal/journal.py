"""An append-only, fsynced record of every setting's original value, written before it changes.

One journal per scope (a tuning project, a static profile). A setting's original value is
recorded once, the first time hone is about to change it, and survives later runs, so `restore`
always returns to the state before hone touched anything, whether the run finished, failed or
was killed with SIGKILL. Tuning and profiles share this one mechanism."""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hone import children
from hone.errors import ActuationError, HoneError
from hone.journal import machine
from hone.journal.settings import settings_locked
from hone.knobs import Actuator, actuator_from_spec
from hone.paths import safe_name, state_dir

OPS = ("begin", "original", "end", "restored", "workload", "restarting")
#: Spec fields that do not say which setting is changed: a shell knob's per-run environment
#: (its port) and timeout, whether a config knob restarts the workload.
_NOT_THE_SETTING = ("env", "timeout", "restart")


@dataclass(frozen=True)
class Original:
    name: str
    spec: dict[str, Any]
    value: str
    #: The path the first write created (a limits drop-in, a folder): absent before hone.
    absent: str | None = None


@dataclass(frozen=True)
class RestoreOutcome:
    name: str
    value: str
    error: str | None = None
    #: Set when the setting no longer held what hone had left it at: someone changed it since,
    #: and restore put the original back over that change.
    changed: str | None = None
    #: Set when a file or folder hone created was left in place: it holds what someone
    #: else wrote since.
    kept: str | None = None
    #: A workload restarted or stopped once the originals were back, not a knob.
    workload: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None


class Journal:
    """JSON lines: `begin`, `original`, `end` and `restored` records."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._originals: dict[str, Original] | None = None
        self._held = False  # this object holds the scope's lock
        #: Read past damaged lines instead of refusing the journal: set for a restore, which
        #: puts back what the other lines recorded and names these. A run never salvages: it
        #: would record a tuned value as the original of a knob whose line was lost.
        self.salvage = False
        #: (line number, text) of each damaged line the last read passed over.
        self.unreadable: list[tuple[int, str]] = []
        #: The project whose journal this is (None for the profiles'): names its `hone restore`.
        self.project: str | None = None

    @classmethod
    def for_project(cls, name: str) -> Journal:
        """The journal of a tuning project: one per exact name (`dup` and `dup.` are two)."""
        journal = cls._in_state_dir(cls._stem(name))
        journal.project = name
        return journal

    @classmethod
    def for_project_host(cls, name: str, host: str) -> Journal:
        """The journal of one host of a cluster project, beside the project's own."""
        journal = cls(cls.for_project(name).path.with_name(f"{cls._stem(name)}@{host}.jsonl"))
        journal.project = name
        return journal

    @classmethod
    def for_project_hosts(cls, name: str) -> list[Journal]:
        """Every host journal of a project still holding originals (not yet archived)."""
        folder = cls.for_project(name).path.parent
        found = sorted(folder.glob(f"{cls._stem(name)}@*.jsonl"))
        hosts = [p.stem.rsplit("@", 1)[1] for p in found if not p.name.endswith(".done.jsonl")]
        return [cls.for_project_host(name, host) for host in hosts]

    @staticmethod
    def _stem(name: str) -> str:
        return f"project.{safe_name(name)}"

    @classmethod
    def for_profiles(cls) -> Journal:
        """The one journal of static profiles, apart from every project's by its prefix."""
        return cls._in_state_dir("profiles")

    @classmethod
    def _in_state_dir(cls, stem: str) -> Journal:
        directory = state_dir() / "journal"
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        if directory not in _recorded:
            _recorded.add(directory)
            _record_held(directory)
        return cls(directory / f"{stem}.jsonl")

    @classmethod
    def _found(cls, path: Path) -> Journal | None:
        """A journal found in a home's folder, as its scope opens it; None for an archived one,
        or a project's whose name neither its file name nor a `begin` tells."""
        if path.name.endswith(".done.jsonl"):
            return None
        journal = cls(path)
        journal.salvage = True
        stem = path.name.split("@")[0].removesuffix(".jsonl")
        if stem != "profiles":
            names = (n for n in _names(path, stem) if cls._stem(n) == stem)
            journal.project = next(names, None)
            if journal.project is None:
                return None
        return journal

    def owner(self) -> machine.Owner:
        """This journal's scope as the machine-wide records name it, with its way back. Its
        HONE_HOME is the folder its `journal/` is in, symlinks resolved: one home, one name."""
        path = self.path.resolve()
        if self.path.stem == "profiles":
            label, command = "the profiles", ("hone", "profile", "rollback")
        else:
            name = self.project if self.project is not None else self.path.stem
            label, command = f"project {name}", ("hone", "restore", name)
            if name.startswith("-"):
                command = ("hone", "restore", "--", name)
        return machine.Owner(
            home=str(path.parent.parent),
            scope=str(path.with_name(path.name.split("@")[0].removesuffix(".jsonl"))),
            journal=str(path),
            label=label,
            restore=command,
        )

    # -- writing ---------------------------------------------------------------------------

    def _append(self, *records: dict[str, Any]) -> None:
        """Write the records with one write and one fsync (a host's originals at once)."""
        now = time.time()
        line = b"".join(
            (json.dumps({"time": now, **record}, sort_keys=True) + "\n").encode()
            for record in records
        )
        new = not self.path.exists()
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            _heal_torn_tail(fd)
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        if new:
            machine.fsync_dir(self.path.parent)

    def begin(self, **meta: Any) -> None:
        self._append({"op": "begin", "pid": os.getpid(), "meta": meta})

    def remember(self, name: str, actuator: Actuator) -> str | None:
        """Durably record the current value of a setting before its first change.

        Returns the original value (None for settings that die with hone's own process)."""
        known = self.originals()
        recorded = self.original_of(name, actuator)
        if actuator.persistent and (setting := actuator.setting()) is not None:
            machine.claim([setting], self.owner())  # again when recorded: a record released by hand
        if recorded is not None:
            return recorded.value
        if not actuator.persistent:
            return None
        value = actuator.get() if actuator.readable else None
        if value is None:
            raise ActuationError("cannot record the original value: the knob has no get", key=name)
        original = Original(name, actuator.spec(), value, actuator.created_path())
        record = {"op": "original", "name": name, "spec": original.spec, "value": value}
        if original.absent is not None:
            record["absent"] = original.absent  # restore removes what the first write creates
        self._append(record)
        known[name] = original
        return value

    def remember_values(self, items: list[tuple[str, Actuator, str]]) -> None:
        """Durably record values already read (name, actuator, value), in one fsync; names
        already recorded keep their first original."""
        known = self.originals()
        new = [(n, a, v) for n, a, v in items if n not in known]
        if not new:
            return
        machine.claim([s for _, a, _ in new if (s := a.setting()) is not None], self.owner())
        self._append(
            *({"op": "original", "name": n, "spec": a.spec(), "value": v} for n, a, v in new)
        )
        for name, actuator, value in new:
            known[name] = Original(name, actuator.spec(), value)

    def reconnect(self, actuators: list[tuple[str, Actuator]]) -> None:
        """Record again, with its value unchanged, the original of a setting now reached
        another way (a host's new port or key file): `restore` builds each knob from its
        last record, and must use the connection that works now."""
        known = self.originals()
        moved = [(n, a) for n, a in actuators if n in known and known[n].spec != a.spec()]
        if not moved:
            return
        self._append(
            *(
                {"op": "original", "name": n, "spec": a.spec(), "value": known[n].value}
                for n, a in moved
            )
        )
        for name, actuator in moved:
            known[name] = Original(name, actuator.spec(), known[name].value)

    def remember_workload(
        self, group: str, host: dict[str, Any], spec: dict[str, Any], running: bool
    ) -> None:
        """A host's workload of a group (or this machine's service, `cluster.restore.SERVICE`),
        as found before the first change (running or not), so `restore` can leave it as it
        was: the first record's state wins. How to reach it is the latest run's (`spec`): a
        run resumed after a kill starts it on a port of its own (HONE_PORT), and a restore
        after that run is killed must stop that one."""
        known = self.workloads().get(group)
        if known is None or known["spec"] != spec:
            record = {"op": "workload", "group": group, "host": host, "spec": spec}
            self._append({**record, "running": running})

    def mark_restarting(self, group: str) -> None:
        """Before hone first stops and starts a group's workload on this host: `restore` then
        restarts it once the originals are back."""
        known = self.workloads().get(group)
        if known is not None and not known.get("restarted"):
            self._append({"op": "restarting", "group": group})

    def workloads(self) -> dict[str, dict[str, Any]]:
        """group -> its `workload` record, with `restarted` set once hone restarted it."""
        found: dict[str, dict[str, Any]] = {}
        for record in self.records():
            if record["op"] == "workload":
                if record["group"] in found:  # a later run's way to it, the first one's state
                    found[record["group"]]["spec"] = record["spec"]
                else:
                    found[record["group"]] = dict(record)
            elif record["op"] == "restarting" and record.get("group") in found:
                found[record["group"]]["restarted"] = True
        return found

    def require_on_disk(self) -> None:
        """Refuse to change anything once the recorded originals have left the disk (the journal
        was archived or deleted under a running process): a change now could never be undone."""
        if self.originals() and not self.path.exists():
            raise HoneError(
                "the journal of original values is gone; nothing more is changed", file=self.path
            )

    def end(self, outcome: str) -> None:
        """The run stopped cleanly; `outcome` says what state it left (applied, restored, ...).
        An applied one records what each setting holds now: a later `restore` can then tell a
        value someone changed since from hone's, and say that it overwrites it."""
        record: dict[str, Any] = {"op": "end", "outcome": outcome}
        if outcome == "applied":
            record["left"] = self._current()
        self._append(record)

    def _current(self) -> dict[str, str]:
        """Each recorded setting's value now (one that cannot be read is left out)."""
        values = {}
        for original in self.originals().values():
            try:
                actuator = actuator_from_spec(original.spec)
                if actuator.readable:
                    values[original.name] = actuator.get()
            except HoneError:
                continue
        return values

    # -- reading ---------------------------------------------------------------------------

    def records(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        data = self.path.read_bytes()
        try:
            lines = data.decode().splitlines()
        except UnicodeDecodeError as exc:
            if not self.salvage:
                raise self._corrupt(f"not UTF-8 at byte {exc.start}") from None
            lines = data.decode(errors="replace").splitlines()  # hone writes ASCII only
        records = []
        unreadable = []
        for number, line in enumerate(lines, 1):
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                # A torn last line from a crash mid-write (no newline after it): the change it
                # announced never happened, and everything before it is intact.
                if number == len(lines) and not data.endswith(b"\n"):
                    continue
                record = None
            if not _well_formed(record) or (self.salvage and "\ufffd" in line):
                if not self.salvage:
                    raise self._corrupt("not a record hone wrote", number)
                unreadable.append((number, line))
                continue
            records.append(record)
        self.unreadable = unreadable
        return records

    def _corrupt(self, what: str, line: int | None = None) -> HoneError:
        """A damaged journal, refused with what to do: a restore puts back what the lines it
        can read recorded, and names the others."""
        command = "hone profile rollback" if self.path.stem == "profiles" else "hone restore"
        return HoneError(
            f"journal is corrupt: {what}; `{command}` puts back what its other lines recorded"
            " and names the damaged ones",
            file=self.path,
            line=line,
        )

    def originals(self) -> dict[str, Original]:
        if self._originals is None:
            self._originals = {
                r["name"]: Original(r["name"], r["spec"], r["value"], r.get("absent"))
                for r in self.records()
                if r["op"] == "original"
            }
        return self._originals

    def original_of(self, name: str, actuator: Actuator) -> Original | None:
        """The recorded original of this knob, None when there is none. A knob whose setter
        the project changed since (another file, key or command) is refused: the recorded
        value belongs to the old setting, and the new one's would never be recorded."""
        original = self.originals().get(name)
        if original is None or _same_setting(original.spec, actuator.spec()):
            return original
        raise HoneError(
            f"knob {name}: its original value was recorded for {_describe(original.spec)}, but "
            f"the project now sets {actuator.describe()}; run `hone restore` on the project first",
            file=self.path,
        )

    def unfinished(self) -> dict[str, Any] | None:
        """The `begin` record of a run that never wrote `end` (it crashed or was killed)."""
        last_begin = None
        for record in self.records():
            if record["op"] == "begin":
                last_begin = record
            elif record["op"] in ("end", "restored"):
                last_begin = None
        return last_begin

    def has_changes(self) -> bool:
        return bool(self.originals())

    def left(self) -> dict[str, str]:
        """What the last run left each setting at, when it ended with a winner or a profile
        applied; empty once another run has begun (its values are its own)."""
        found: dict[str, str] = {}
        for record in self.records():
            if record["op"] == "begin":
                found = {}
            elif record["op"] == "end":
                found = record.get("left") or {}
        return found

    # -- restoring -------------------------------------------------------------------------

    def restore(
        self, after: Callable[[], list[RestoreOutcome]] | None = None
    ) -> list[RestoreOutcome]:
        """Put every recorded setting back, newest first, then run `after` (a host's workload
        restarted on its original values); archive the journal when all succeed.

        Always under the scope's lock: a restore while a run of the scope is going would archive
        the originals that run still needs, and its next change would journal none."""
        with self.locked():
            children.stop_orphans()  # a set command of a killed run must not write after us
            return self._restore(after)

    def _restore(
        self, after: Callable[[], list[RestoreOutcome]] | None = None
    ) -> list[RestoreOutcome]:
        outcomes = self._unreadable_outcomes()
        built: list[tuple[Original, Actuator]] = []
        for original in reversed(list(self.originals().values())):
            try:
                built.append((original, actuator_from_spec(original.spec)))
            except HoneError as exc:
                outcomes.append(RestoreOutcome(original.name, original.value, str(exc)))
        left = self.left()
        with settings_locked((actuator for _, actuator in built), self.owner(), restoring=True):
            # what each setting held before any is put back: putting one back may change
            # another (a disk's scheduler resets its nr_requests), which no one else changed
            changes = [_changed_since(actuator, left.get(o.name)) for o, actuator in built]
            for (original, actuator), changed in zip(built, changes, strict=True):
                try:
                    actuator.apply(original.value)
                    outcomes.append(RestoreOutcome(original.name, original.value, None, changed))
                except HoneError as exc:
                    outcomes.append(RestoreOutcome(original.name, original.value, str(exc)))
        if all(o.ok for o in outcomes):
            outcomes = self._remove_created(outcomes)
        if after is not None and all(o.ok for o in outcomes):
            outcomes += after()
        if all(o.ok for o in outcomes):
            try:
                self._append({"op": "restored"})
                self.archive()
            except OSError:
                pass  # a full disk: the values are back; the journal stays for another restore
        return outcomes

    def _remove_created(self, outcomes: list[RestoreOutcome]) -> list[RestoreOutcome]:
        """Once every original is back, remove each path that was absent before hone's first
        write created it, newest first, when it is empty again (nothing but hone's own lines
        were in it, and they are out); one that holds more was written by someone since, and is
        kept, said on its setting's outcome."""
        done: set[str] = set()
        for original in reversed(list(self.originals().values())):
            if original.absent is None or original.absent in done:
                continue
            done.add(original.absent)
            try:
                kept, error = _remove_if_empty(Path(original.absent)), None
            except OSError as exc:
                reason = exc.strerror or str(exc)
                kept, error = None, f"cannot remove {original.absent}, absent before hone: {reason}"
            if kept or error:
                outcomes = [
                    dataclasses.replace(o, kept=kept or o.kept, error=error or o.error)
                    if o.name == original.name
                    else o
                    for o in outcomes
                ]  # fmt: skip
        return outcomes

    def _unreadable_outcomes(self) -> list[RestoreOutcome]:
        """A failed outcome for each damaged line a salvaging restore passed over: a setting
        recorded there cannot be put back by hone, so the journal is kept."""
        self.records()
        return [
            RestoreOutcome(
                f"{self.path}:{number}",
                text[:80],
                "this line is damaged: if it recorded a setting, put that setting back by hand,"
                " then delete the line and restore again",
            )
            for number, text in self.unreadable
        ]

    def archive(self) -> Path | None:
        """Move a fully restored journal aside so the next run records fresh originals."""
        if not self.path.exists():
            return None
        target = self.path.with_name(f"{self.path.stem}.{int(time.time() * 1000)}.done.jsonl")
        self.path.rename(target)
        machine.fsync_dir(self.path.parent)
        self._originals = None
        machine.release(self.owner().journal)  # after the rename: a crash between keeps them
        return target

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold an exclusive lock on this scope so two hone processes never interleave
        (re-entrant for this object: a run that holds it may restore)."""
        if self._held:
            yield
            return
        fd = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
                raise HoneError(
                    f"another hone process (pid {holder or '?'}) is working on this scope;"
                    " stop it first",
                    file=self.path,
                ) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            self._held = True
            try:
                yield
            finally:
                self._held = False
        finally:
            os.close(fd)  # closing releases the lock


#: The homes' journal folders whose journals have been matched with the machine-wide records.
_recorded: set[Path] = set()


def _record_held(directory: Path) -> None:
    """Write the machine-wide records that a home's journals holding originals lack (journals
    written before these records existed), once per process: with none, another HONE_HOME
    would journal this home's values as its originals. Nothing to read when nothing is held;
    a folder or journal that cannot be read is left to the command that changes a setting."""
    found: dict[str, list[tuple[float, machine.Owner]]] = {}
    try:
        for path in sorted(directory.glob("*.jsonl")):
            journal = Journal._found(path)
            if journal is None:
                continue
            first: dict[str, float] = {}
            for record in journal.records():
                if record["op"] == "original" and (setting := _setting(record["spec"])):
                    when = record.get("time")
                    first.setdefault(setting, when if isinstance(when, int | float) else 0.0)
            for setting, when in first.items():
                found.setdefault(setting, []).append((when, journal.owner()))
        if found:
            machine.record_missing(found)
    except (OSError, HoneError):
        return


def _names(path: Path, stem: str) -> Iterator[str]:
    """The names a project journal may be of: the one its file name spells (a name of letters,
    digits, `_` and `-`), then the study of each `begin` in it or in the project's own journal
    (a host's journal has none)."""
    if stem.count(".") == 2:
        yield stem.split(".")[1]
    for source in [path, path.with_name(f"{stem}.jsonl")] if "@" in path.name else [path]:
        journal = Journal(source)
        journal.salvage = True
        for record in journal.records():
            meta = record.get("meta") if record["op"] == "begin" else None
            study = meta.get("study") if isinstance(meta, dict) else None
            if isinstance(study, str):
                yield study.rpartition("#")[0]


def _setting(spec: dict[str, Any]) -> str | None:
    """The setting a journaled knob changes; None for one this hone cannot build."""
    try:
        return actuator_from_spec(spec).setting()
    except (OSError, HoneError):
        return None


def _changed_since(actuator: Actuator, left: str | None) -> str | None:
    """What the setting holds instead of the value hone left it at, in words; None when it
    holds that value (or hone left none, or it cannot be read: the restore says why)."""
    if left is None:
        return None
    try:
        now = actuator.get()
    except HoneError:
        return None
    if actuator.normalise(now) == actuator.normalise(left):
        return None
    return f"it held {now.strip()!r}, not the {left.strip()!r} hone had left: changed since"


def _remove_if_empty(path: Path) -> str | None:
    """Remove a file or folder hone created when it is empty; why it is kept, in words, when
    it is not (OSError when the removal fails)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(info.st_mode):
        if not _only_folders(path):
            return f"kept {path}, absent before hone: it holds files hone did not write"
        for folder, _, _ in os.walk(path, topdown=False):
            os.rmdir(folder)
    elif stat.S_ISREG(info.st_mode) and info.st_size == 0:
        path.unlink()
    else:
        return f"kept {path}, absent before hone: it holds text hone did not write"
    machine.fsync_dir(path.parent)
    return None


def _only_folders(path: Path) -> bool:
    """True when a folder holds nothing but empty folders (what `mkdir -p` made on the way)."""
    return all(
        child.is_dir() and not child.is_symlink() and _only_folders(child)
        for child in path.iterdir()
    )


def _well_formed(record: Any) -> bool:
    """A record hone could have written: an op, and for an original its name, spec and value."""
    if not isinstance(record, dict) or record.get("op") not in OPS:
        return False
    if record["op"] == "end":
        left = record.get("left", {})
        return isinstance(left, dict) and all(isinstance(v, str) for v in left.values())
    if record["op"] != "original":
        return True
    return (
        isinstance(record.get("name"), str)
        and isinstance(record.get("value"), str)
        and isinstance(record.get("absent", ""), str)
        and isinstance(record.get("spec"), dict)
        and isinstance(record["spec"].get("kind"), str)
    )


def _same_setting(recorded: dict[str, Any], spec: dict[str, Any]) -> bool:
    def setting(d: Any) -> Any:
        if not isinstance(d, dict):
            return d
        if d.get("kind") == "remote":
            # the host is the journal's own (one per host); how it is reached (address, port,
            # user, key files) is not the setting, the knob on it is
            return setting(d.get("knob"))
        return {k: v for k, v in d.items() if k not in _NOT_THE_SETTING}

    return setting(recorded) == setting(spec)


def _describe(spec: dict[str, Any]) -> str:
    try:
        return actuator_from_spec(spec).describe()
    except HoneError:
        return str(spec.get("kind"))


def _heal_torn_tail(fd: int) -> None:
    """Cut a last line that a crash left without its newline. Its record was never complete, so
    the change it announced never happened (originals are written before changes); appending
    after it would glue two records into one corrupt line."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    tail = os.pread(fd, min(size, 1 << 20), max(0, size - (1 << 20)))
    cut = tail.rfind(b"\n")
    keep = max(0, size - len(tail)) + cut + 1 if cut >= 0 else max(0, size - len(tail))
    os.ftruncate(fd, keep)
    os.fsync(fd)
