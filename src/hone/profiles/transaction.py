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
from hone.profiles.library import Item, Profile

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
        if key in MOVED_TO_DEBUGFS and not actuator.path.exists():  # type: ignore[attr-defined]
            return "not in this kernel: Linux 5.13 moved it to /sys/kernel/debug/sched"
        return actuator
    if section == "sysfs":
        return actuator_from_spec({"kind": "sysfs", "path": "/sys/" + key.lstrip("/")})
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


def _marker() -> Path:
    return state_dir() / "profile.active"


def active_profile() -> str | None:
    marker = _marker()
    return marker.read_text().strip() or None if marker.exists() else None


def _plan(profile: Profile) -> list[tuple[Item, Actuator | str]]:
    """Every item with its actuator, each read once and checked as a tuning run checks its
    knobs: a bad key, a read-only setting or a value that can never be written fails here,
    before any change, not after the items before it were set and had to be undone."""
    plan = []
    for item in profile.items:
        try:
            actuator = actuator_for(item)
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
    return plan


def apply_profile(profile: Profile) -> ApplyResult:
    """Roll back the active profile, then set this one's items; all or nothing. When an item
    fails, this profile's changes are rolled back and the profile that was active before is
    applied again: the system is left as it was found."""
    plan = _plan(profile)
    journal = Journal.for_profiles()
    changed = [actuator for _, actuator in plan if isinstance(actuator, Actuator)]
    with journal.locked(), settings_locked(changed):
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
        except BaseException:
            _restore(journal)
            raise
        return result


def _apply_plan(journal: Journal, profile: Profile, plan: list) -> list[Outcome]:
    journal.begin(profile=profile.name)
    _marker().write_text(profile.name + "\n")
    outcomes = [_apply_item(journal, item, actuator, profile) for item, actuator in plan]
    journal.end("applied")
    return outcomes


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
