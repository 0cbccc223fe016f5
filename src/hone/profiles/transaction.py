"""Applying a profile as a transaction, through the same actuators and journal as tuning.

Before anything changes, the previously applied profile is rolled back; every original value is
journaled (fsync) before its first change; every set is read back; a failure rolls back what was
done, newest first. A crash in the middle leaves the journal, and `rollback` completes it."""

from __future__ import annotations

from dataclasses import dataclass

from hone.errors import HoneError
from hone.journal import Journal
from hone.knobs import Actuator, actuator_from_spec
from hone.paths import state_dir
from hone.profiles.library import Item, Profile

SCOPE = "profile"
ADVICE = {
    "tip": "advice",
    "bios": "check in the firmware setup",
    "kernel_config": "check the kernel build configuration",
    "bootloader.grub2": "kernel command line: needs a reboot, not applied",
    "check": "check",
    "schedule_policy": "not applied (scheduling policy of processes)",
    "systemctl": "service state: not applied by this version",
    "ulimit": "resource limit: not applied by this version",
    "script": "A-Tune helper script: not shipped with hone, not applied",
    "file_config": "not applied by this version",
}


@dataclass
class Outcome:
    item: Item
    status: str  # set | unchanged | skipped | differs | matches
    detail: str = ""


def actuator_for(item: Item) -> Actuator | None:
    if item.section == "sysctl":
        return actuator_from_spec({"kind": "sysctl", "key": item.key})
    if item.section == "sysfs":
        return actuator_from_spec({"kind": "sysfs", "path": "/sys/" + item.key.lstrip("/")})
    return None


def _marker():
    return state_dir() / "profile.active"


def active_profile() -> str | None:
    marker = _marker()
    return marker.read_text().strip() or None if marker.exists() else None


def apply_profile(profile: Profile) -> list[Outcome]:
    """Roll back the active profile, then set this one's items; all or nothing."""
    journal = Journal.for_scope(SCOPE)
    with journal.locked():
        _restore(journal)
        journal.begin(profile=profile.name)
        _marker().write_text(profile.name + "\n")
        outcomes: list[Outcome] = []
        try:
            for item in profile.items:
                actuator = actuator_for(item)
                if actuator is None:
                    outcomes.append(Outcome(item, "skipped", ADVICE.get(item.section, "")))
                    continue
                name = f"{item.section}:{item.key}"
                try:
                    journal.remember(name, actuator)
                    actuator.apply(item.value)
                except HoneError as exc:
                    raise HoneError(
                        f"[{item.section}] {item.key} = {item.value}: {exc.message}; "
                        "every change of this profile was rolled back",
                        file=profile.path,
                    ) from None
                outcomes.append(Outcome(item, "set"))
        except BaseException:
            _restore(journal)
            raise
        journal.end("applied")
        return outcomes


def rollback() -> list[str]:
    """Put back every value the active (or half-applied) profile changed, newest first."""
    journal = Journal.for_scope(SCOPE)
    with journal.locked():
        return _restore(journal)


def _restore(journal: Journal) -> list[str]:
    outcomes = journal.restore()
    failed = [o for o in outcomes if not o.ok]
    if failed:
        raise HoneError("could not roll back: " + "; ".join(f"{o.name}: {o.error}" for o in failed))
    _marker().unlink(missing_ok=True)
    return [f"{o.name} = {o.value}" for o in outcomes]


def check_profile(profile: Profile) -> list[Outcome]:
    """Compare the live system with each settable item of the profile."""
    outcomes = []
    for item in profile.items:
        actuator = actuator_for(item)
        if actuator is None:
            outcomes.append(Outcome(item, "skipped", ADVICE.get(item.section, "")))
            continue
        try:
            live = actuator.get()
        except HoneError as exc:
            outcomes.append(Outcome(item, "differs", exc.message))
            continue
        same = actuator.normalise(live) == actuator.normalise(item.value)
        outcomes.append(Outcome(item, "matches" if same else "differs", f"live: {live}"))
    return outcomes
