"""Applying a profile as a transaction, through the same actuators and journal as tuning.

Every item is checked first (its actuator built, its current value read, whether it can be
written), so a bad key, a missing path or a read-only setting fails before anything changes.
Then the previously applied profile is rolled back; every original value is journaled (fsync)
before its first change; every set is read back; a failure rolls back what was done, newest
first. A crash in the middle leaves the journal, and
`rollback` completes it. Items already at their value are left alone."""

from __future__ import annotations

import gzip
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from hone.errors import HoneError
from hone.journal import Journal
from hone.journal.settings import settings_locked
from hone.knobs import Actuator, actuator_from_spec
from hone.knobs.grub import cmdline_value, grub_present
from hone.knobs.script import find_script
from hone.knobs.systemctl import SystemctlActuator
from hone.paths import state_dir
from hone.profiles.library import Item, Profile, not_here

ADVICE = {
    "tip": "advice",
    "bios": "check in the firmware setup",
    "check": "not applied (A-Tune's environment check)",
    "schedule_policy": "not applied (scheduling policy of processes)",
    "file_config": "not applied: edit the file yourself",
}

#: The scheduler's debug settings Linux 5.13 took out of /proc/sys. A-Tune's profiles still set
#: them; on a newer kernel they are skipped, saying why, where any other missing key (a typo)
#: stops the profile before anything changes.
MOVED_TO_DEBUGFS = frozenset(
    f"kernel.sched_{name}"
    for name in (
        "latency_ns", "min_granularity_ns", "wakeup_granularity_ns", "migration_cost_ns",
        "nr_migrate", "tunable_scaling",
    )
)  # fmt: skip


@dataclass
class Outcome:
    item: Item
    #: set | staged | unchanged | skipped | advice | matches | differs | unknown
    status: str
    detail: str = ""


@dataclass
class ApplyResult:
    profile: str
    outcomes: list[Outcome]
    placeholders: dict[str, tuple[str, str]] = field(default_factory=dict)
    previous: str | None = None  # the profile rolled back first
    restored: list[str] = field(default_factory=list)

    @property
    def changed(self) -> int:
        return sum(o.status in ("set", "staged") for o in self.outcomes)


def actuator_for(item: Item) -> Actuator | str:
    """The actuator that sets this item, or the reason it is not set."""
    section, key = item.section, item.key
    if section == "sysctl":
        actuator = actuator_from_spec({"kind": "sysctl", "key": key})
        path = actuator.path  # type: ignore[attr-defined]
        if key in MOVED_TO_DEBUGFS and not path.exists():
            return "not in this kernel: Linux 5.13 moved it to /sys/kernel/debug/sched"
        if _write_only(path):
            return (
                "not applied: a trigger that acts once (no value to read back or roll back);"
                f" run `sysctl -w {key}={item.value}` when it is wanted"
            )
        return actuator
    if section == "sysfs":
        return absent_here(key) or _sysfs(key)
    if section == "systemctl":
        return actuator_from_spec({"kind": "systemctl", "unit": key})
    if section == "ulimit":
        parts = key.rsplit(".", 2)
        if len(parts) != 3:
            raise HoneError("a limit is USER.soft|hard.ITEM", key=key)
        return actuator_from_spec(
            {"kind": "ulimit", "domain": parts[0], "type": parts[1], "item": parts[2]}
        )
    if section == "script":
        if find_script(key) is None:
            return (
                f"no helper script {key}/get.sh, set.sh: put A-Tune's scripts folder in "
                "HONE_SCRIPT_PATH to apply it"
            )
        return actuator_from_spec({"kind": "script", "name": key})
    if section == "bootloader.grub2":
        if not grub_present():
            return f"no GRUB here: add {key}={item.value} to the kernel command line yourself"
        return actuator_from_spec({"kind": "grub2", "key": key})
    if section == "kernel_config":
        return "check the kernel build configuration"
    return ADVICE.get(section, "not applied")


#: A disk's settings that only some disks or schedulers have: A-Tune's profiles set a SCSI
#: disk's queue depth and cfq's or bfq's tunables, which a virtio or NVMe disk and another
#: scheduler do not have. Missing there, they are skipped, saying why, as a missing key of
#: any other kind (a typo) still stops the profile before anything changes.
_QUEUE_DEPTH = re.compile(r"block/([^/]+)/device/queue_depth")
_IOSCHED = re.compile(r"block/([^/]+)/queue/iosched/([^/]+)")
_SCHEDULER = re.compile(r"block/([^/]+)/queue/scheduler")


def _write_only(path: Path) -> bool:
    """/proc/sys's triggers (vm.drop_caches, vm.compact_memory, net.ipv4.route.flush): no one
    may read them, root included (A-Tune's tomcat profile drops the page cache)."""
    try:
        return not path.stat().st_mode & 0o444
    except OSError:
        return False


def _sysfs(key: str) -> Actuator:
    return actuator_from_spec({"kind": "sysfs", "path": "/sys/" + key.lstrip("/")})


def absent_here(key: str) -> str | None:
    """Why a sysfs file a profile names is not on this machine, when that comes from the
    machine's kind of disk, its scheduler or its kernel rather than a typo; None otherwise
    (also when the file is there)."""
    key = os.path.normpath(key.strip("/"))
    if Path("/sys", key).exists():
        return None
    if key == "kernel/debug/sched_features":
        return "not in this kernel: Linux 5.13 moved it to /sys/kernel/debug/sched/features"
    disk = _QUEUE_DEPTH.fullmatch(key)
    if disk and Path("/sys/block", disk[1], "queue").is_dir():
        return f"{disk[1]} has no queue depth to set (a SCSI or SATA disk's setting)"
    tunable = _IOSCHED.fullmatch(key)
    if tunable and Path("/sys/block", tunable[1], "queue").is_dir():
        scheduler = _scheduler(tunable[1])
        return f"{tunable[1]}'s scheduler {scheduler} has no {tunable[2]}"
    return None


def _scheduler(disk: str) -> str:
    try:
        text = Path("/sys/block", disk, "queue", "scheduler").read_text()
    except OSError:
        return "?"
    chosen = re.search(r"\[([^\]]+)\]", text)
    return chosen[1] if chosen else text.strip()


def _marker() -> Path:
    return state_dir() / "profile.active"


def active_profile() -> str | None:
    marker = _marker()
    return marker.read_text().strip() or None if marker.exists() else None


def _plan(profile: Profile) -> list[tuple[Item, Actuator | str]]:
    """Every item with its actuator, each read once and checked as a tuning run checks its
    knobs: a bad key, a read-only setting or a value that can never be written fails here,
    before any change, not after the items before it were set and had to be undone."""
    for placeholder, (value, how) in profile.placeholders.items():
        if missing := not_here(placeholder, value, how):
            raise HoneError(f"{missing}; nothing was changed", file=profile.path)
    plan, later = [], []
    schedulers = {m[1] for i in profile.section("sysfs") if (m := _SCHEDULER.fullmatch(
        os.path.normpath(i.key.strip("/"))))}  # fmt: skip
    for item in profile.items:
        try:
            actuator = actuator_for(item)
            tunable = _IOSCHED.fullmatch(os.path.normpath(item.key.strip("/")))
            if isinstance(actuator, str) and tunable and tunable[1] in schedulers:
                # the profile chooses this disk's scheduler, whose tunables exist once it is
                # set: they are set after it (or skipped then, when it has not this one)
                if not item.value:
                    raise HoneError("no value")
                later.append((item, _sysfs(item.key)))
                continue
            if isinstance(actuator, Actuator):
                if not item.value:
                    raise HoneError("no value")
                actuator.get()
                actuator.check_writable()
                actuator.check_value(item.value)
                if isinstance(actuator, SystemctlActuator):
                    actuator.check_startable(item.value)
        except HoneError as exc:
            raise HoneError(
                f"[{item.section}] {item.key}: {exc.message}; nothing was changed",
                file=item.path or profile.path,
                line=item.line,
            ) from None
        plan.append((item, actuator))
    # A disk's scheduler first: choosing one resets the queue's nr_requests (and the
    # tunables of the scheduler before it go), so a value set before it did not hold
    first = [(i, a) for i, a in plan if i.section == "sysfs" and _disk_of(i, _SCHEDULER)]
    return first + [entry for entry in plan if entry not in first] + later


def _disk_of(item: Item, pattern: re.Pattern[str]) -> str | None:
    found = pattern.fullmatch(os.path.normpath(item.key.strip("/")))
    return found[1] if found else None


def apply_profile(profile: Profile) -> ApplyResult:
    """Roll back the active profile, then set this one's items; all or nothing. When an item
    fails, or the apply is stopped (Ctrl-C, SIGTERM), this profile's changes are rolled back
    and the profile that was active before is applied again: the system is left as it was
    found."""
    plan = _plan(profile)
    journal = Journal.for_profiles()
    changed = [actuator for _, actuator in plan if isinstance(actuator, Actuator)]
    with journal.locked(), settings_locked(changed, journal.owner()):
        previous = active_profile()
        restored = _restore(journal)
        result = ApplyResult(profile.name, [], profile.placeholders, previous, restored)
        try:
            result.outcomes = _apply_plan(journal, profile, plan)
        except HoneError as exc:
            _restore(journal)
            if previous:
                _reapply(journal, previous, exc)
            raise
        except BaseException as exc:  # Ctrl-C, SIGTERM: as for a failure, the machine as found
            _restore(journal)
            if previous:
                _reapply(journal, previous, HoneError(str(exc) or type(exc).__name__))
            raise
        return result


def _apply_plan(journal: Journal, profile: Profile, plan: list) -> list[Outcome]:
    journal.begin(profile=profile.name)
    _marker().write_text(profile.name + "\n")
    outcomes = []
    for item, actuator in plan:
        disk = _disk_of(item, _SCHEDULER) if item.section == "sysfs" else None
        if disk and isinstance(actuator, Actuator) and _changes(actuator, item.value):
            _remember_queue(journal, disk, plan)
        outcomes.append(_apply_item(journal, item, actuator, profile))
    journal.end("applied")
    return outcomes


def _changes(actuator: Actuator, value: str) -> bool:
    try:
        return actuator.normalise(actuator.get()) != actuator.normalise(value)
    except HoneError:
        return True  # _apply_item says why it cannot be read


def _remember_queue(journal: Journal, disk: str, plan: list) -> None:
    """The originals of the profile's other settings of this disk's queue, journaled before
    its scheduler changes: the change resets some of them (nr_requests), so read after it
    they would be the new scheduler's defaults, and a rollback, which puts the scheduler back
    first (newest first), would leave them there."""
    prefix = f"block/{disk}/"
    for item, actuator in plan:
        key = os.path.normpath(item.key.strip("/"))
        if (
            item.section == "sysfs"
            and isinstance(actuator, Actuator)
            and key.startswith(prefix)
            and not _SCHEDULER.fullmatch(key)
            and not _IOSCHED.fullmatch(key)
        ):
            try:
                journal.remember(f"{item.section}:{item.key}", actuator)
            except HoneError as exc:
                raise HoneError(
                    f"[{item.section}] {item.key}: {exc.message}; every change of this profile"
                    " was rolled back",
                    file=item.path,
                    line=item.line,
                ) from None


def _reapply(journal: Journal, name: str, failure: HoneError) -> None:
    """Put the previously active profile back after `failure`; if even that fails, say so."""
    from hone.profiles.library import ProfileLibrary

    try:
        previous = ProfileLibrary().load(name)
        _apply_plan(journal, previous, _plan(previous))
    except HoneError as again:
        _restore(journal)
        raise HoneError(
            f"{failure}; the previous profile {name} could not be applied again"
            f" ({again.message}): no profile is active, every value is as before {name}"
        ) from None


def _apply_item(
    journal: Journal, item: Item, actuator: Actuator | str, profile: Profile
) -> Outcome:
    if isinstance(actuator, str):
        status = "advice" if item.section in ("tip", "bios", "kernel_config") else "skipped"
        if item.section == "kernel_config":
            return _kernel_config(item)
        return Outcome(item, status, actuator)
    if item.section == "sysfs" and (reason := absent_here(item.key)):
        return Outcome(item, "skipped", reason)  # a tunable of a scheduler the disk lacks
    try:
        if actuator.normalise(actuator.get()) == actuator.normalise(item.value):
            return Outcome(item, "unchanged")
        before = journal.remember(f"{item.section}:{item.key}", actuator)
        actuator.apply(item.value)
    except HoneError as exc:
        raise HoneError(
            f"[{item.section}] {item.key} = {item.value}: {exc.message}; "
            "every change of this profile was rolled back",
            file=item.path or profile.path,
            line=item.line,
        ) from None
    if item.section == "bootloader.grub2":
        return Outcome(item, "staged", "for the next boot (run update-grub, then reboot)")
    return Outcome(item, "set", f"was {_shown(before)}")


def _shown(value: str | None) -> str:
    """A value read from the system as a detail shows it: a limit limits.conf has no line for
    reads empty, which `live: ` and `(was )` left for the reader to guess."""
    return value if value and value.strip() else "not set"


def rollback() -> list[str]:
    """Put back every value the active (or half-applied) profile changed, newest first."""
    journal = Journal.for_profiles()
    journal.salvage = True  # a damaged line is named, and every other setting put back
    with journal.locked():
        return _restore(journal)


def _restore(journal: Journal) -> list[str]:
    outcomes = journal.restore()
    failed = [o for o in outcomes if not o.ok]
    if failed:
        raise HoneError("could not roll back: " + "; ".join(f"{o.name}: {o.error}" for o in failed))
    _marker().unlink(missing_ok=True)
    return [
        f"{o.name} = {o.value}"
        + (f" (overwrote a change: {o.changed})" if o.changed else "")
        + (f" ({o.kept})" if o.kept else "")
        for o in outcomes
    ]


def check_profile(profile: Profile) -> list[Outcome]:
    """Compare the live system with each item of the profile."""
    outcomes = []
    for item in profile.items:
        try:
            actuator = actuator_for(item)
        except HoneError as exc:
            outcomes.append(Outcome(item, "differs", exc.message))
            continue
        if item.section == "bootloader.grub2":
            outcomes.append(_boot_parameter(item, actuator))
        elif item.section == "kernel_config":
            outcomes.append(_kernel_config(item))
        elif isinstance(actuator, str):
            status = "advice" if item.section in ("tip", "bios") else "skipped"
            outcomes.append(Outcome(item, status, actuator))
        else:
            try:
                live = actuator.get()
            except HoneError as exc:
                outcomes.append(Outcome(item, "differs", exc.message))
                continue
            same = actuator.normalise(live) == actuator.normalise(item.value)
            detail = f"live: {_shown(live)}"
            outcomes.append(Outcome(item, "matches" if same else "differs", detail))
    return outcomes


def _boot_parameter(item: Item, actuator: Actuator | str) -> Outcome:
    live = cmdline_value(item.key)
    if live == item.value:
        return Outcome(item, "matches", "on the running kernel's command line")
    staged = actuator.get() if isinstance(actuator, Actuator) else ""
    if staged == item.value:
        return Outcome(item, "staged", "staged for the next boot, not running yet")
    return Outcome(item, "differs", f"running kernel: {item.key}={live}" if live else "not set")


def kernel_config() -> dict[str, str] | None:
    """The running kernel's build options (/proc/config.gz or /boot/config-RELEASE)."""
    release = os.uname().release
    try:
        text = gzip.decompress(Path("/proc/config.gz").read_bytes()).decode()
    except OSError:
        try:
            text = Path(f"/boot/config-{release}").read_text()
        except OSError:
            return None
    options = {}
    for line in text.splitlines():
        if line.startswith("CONFIG_") and "=" in line:
            name, _, value = line.partition("=")
            options[name] = value.strip('"')
    return options


def _kernel_config(item: Item) -> Outcome:
    options = kernel_config()
    if options is None:
        return Outcome(item, "unknown", "the kernel's build configuration is not readable")
    live = options.get(item.key, "n")
    same = live == item.value
    detail = f"kernel built with {item.key}={live}" + ("" if same else " (needs another kernel)")
    return Outcome(item, "matches" if same else "differs", detail)
