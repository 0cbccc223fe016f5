"""A systemd service's processes: `hone diagnose --unit NAME` and `hone diagnose -- systemctl
start NAME`.

A service is not a process tree: a forking daemon's first process is gone, its parent is init,
and the processes it starts later (a worker the master forks, a helper it runs) are nobody's
descendants but its own. systemd keeps each service in a control group of its own
(`system.slice/NAME.service`), and every process forked in it is born in it, so the group is the
service: its processes are the `cgroup.procs` of its folder and of every folder under it (the
service's own sub-groups).

The group is asked of systemd (`systemctl show -p ControlGroup --value UNIT`, an argv, no
shell). Where systemctl is missing or cannot answer (no systemd as init: a container, a chroot)
the folder is looked for in the hierarchies systemd keeps services in, as /proc/self/mounts
lists them: cgroup2 (at /sys/fs/cgroup on a unified host, /sys/fs/cgroup/unified in hybrid
mode) and v1's `name=systemd` (/sys/fs/cgroup/systemd): `system.slice/UNIT` first, then any
folder named UNIT in the whole hierarchy (user slices, nested slices)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from hone.diagnose.descendants import processes
from hone.errors import HoneError

#: The unit types systemd knows; a name without one of these suffixes is a service's.
SUFFIXES = (".service", ".socket", ".scope", ".slice", ".target", ".mount", ".automount",
            ".swap", ".timer", ".path", ".device")  # fmt: skip
#: What systemd allows in a unit name: no '/', so a name never leaves the hierarchy.
_NAME = re.compile(r"[A-Za-z0-9:_.@\\-]{1,255}")
#: The systemctl verbs that leave a unit running when they succeed, and `service`'s.
VERBS = ("start", "restart", "reload-or-restart")
SERVICE_VERBS = ("start", "restart")
MOUNTS = Path("/proc/self/mounts")


def unit_name(name: str) -> str:
    """`nginx` -> `nginx.service`; a name with a unit type's suffix stays as it is."""
    if not _NAME.fullmatch(name) or name.startswith("-"):
        raise HoneError(f"{name!r} is not a unit name (letters, digits and :_.@-\\ only)")
    return name if name.endswith(SUFFIXES) else f"{name}.service"


def started(argv: list[str]) -> list[str]:
    """The units `systemctl start|restart|reload-or-restart UNIT...` or `service NAME
    start|restart` leaves running; [] for any other command, options and patterns included
    (only the plain shape is known to start exactly those units)."""
    program = Path(argv[0]).name if argv else ""
    if program == "systemctl" and len(argv) >= 3 and argv[1] in VERBS:
        names = argv[2:]
    elif program == "service" and len(argv) == 3 and argv[2] in SERVICE_VERBS:
        names = [argv[1]]
    else:
        return []
    if not all(_NAME.fullmatch(n) and not n.startswith("-") for n in names):
        return []
    return [unit_name(n) for n in names]


def hierarchies(mounts: Path = MOUNTS) -> list[Path]:
    """The mount points of cgroup2 and of v1's name=systemd hierarchy, in the mount table's
    order."""
    found = []
    for line in mounts.read_text().splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        kind, options = fields[2], fields[3].split(",")
        if kind == "cgroup2" or (kind == "cgroup" and "name=systemd" in options):
            # the mount table writes a space, tab, newline or backslash as \ and 3 octal digits
            found.append(Path(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), fields[1])))
    return found


@dataclass
class Unit:
    """One or more units and their control groups' folders."""

    names: list[str]
    folders: list[Path]

    @property
    def name(self) -> str:
        return ", ".join(self.names)

    def pids(self) -> set[int]:
        """Every process now in the groups or their sub-groups (a group removed as its unit
        stops has none)."""
        found: set[int] = set()
        for folder in self.folders:
            for top, _, _ in os.walk(folder):
                try:
                    found.update(int(p) for p in Path(top, "cgroup.procs").read_text().split())
                except OSError:  # removed since the walk listed it
                    continue
        return found

    def main(self, look: float = 0.3) -> int:
        """The main process, which names the diagnosis and which the language's own recorders
        take first: the one that took the most CPU time over a short look, a busy worker rather than
        nginx's master or the postmaster, which only hand out work; where none ran, the oldest,
        the one that started the service. The window's perf recorders take every process."""
        table = processes()
        first = {pid: table[pid] for pid in self.pids() - {os.getpid()} if pid in table}
        alive = {pid: row for pid, row in first.items() if row[2] not in ("Z", "X")}
        if not alive:
            where = ", ".join(map(str, self.folders))
            raise HoneError(f"unit {self.name} has no processes: its control group ({where}) "
                            "holds none; is it running?")  # fmt: skip
        time.sleep(look)
        later = processes()
        ranked = [(row[3] - later[pid][3], row[4], pid)
                  for pid, row in alive.items() if pid in later]  # fmt: skip
        if not ranked:  # all ended in the look: the oldest, for the error it will meet
            ranked = [(0, row[4], pid) for pid, row in alive.items()]
        return min(ranked)[2]  # the most CPU time in the look, then the oldest


def find(names: list[str]) -> Unit:
    """The units' control groups, each of which holds a process; one line saying where hone
    looked when one has no group or no process."""
    roots = hierarchies()
    folders = []
    for name in names:
        unit = Unit([name], _folders(name, roots))
        unit.main()  # one line when its group holds no process
        folders += unit.folders
    return Unit(names, folders)


def _folders(unit: str, roots: list[Path]) -> list[Path]:
    """The unit's folders in the hierarchies: where systemd says, else found by name."""
    path, why = _ask_systemd(unit)
    if path == "":  # systemd runs and gives the unit no group: it is not running
        raise HoneError(f"unit {unit} has no control group: systemctl show gives it none; "
                        "is it running?")  # fmt: skip
    if not roots:
        raise HoneError(f"unit {unit}: no cgroup2 or name=systemd hierarchy is mounted "
                        f"({MOUNTS} lists none)")  # fmt: skip
    if path is not None:
        known = [root / path.lstrip("/") for root in roots if (root / path.lstrip("/")).is_dir()]
        if known:
            return known
        why = f"systemctl show gives {path}, which is in none of them"
    found = [folder for root in roots for folder in _search(root, unit)]
    if not found:
        where = ", ".join(map(str, roots))
        raise HoneError(f"unit {unit} has no control group: no folder {unit} is in {where} "
                        f"({why})")  # fmt: skip
    return found


def _ask_systemd(unit: str) -> tuple[str | None, str]:
    """systemd's path of the unit's group ('' for none), or None and why it could not say."""
    systemctl = shutil.which("systemctl")
    if systemctl is None:
        return None, "systemctl is not installed"
    try:
        done = subprocess.run([systemctl, "show", "-p", "ControlGroup", "--value", unit],
                              capture_output=True, text=True, timeout=30, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, f"systemctl failed: {error}"
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[0]
        return None, f"systemctl could not say: {said}"
    return done.stdout.strip(), ""


def _search(root: Path, unit: str) -> list[Path]:
    """Folders named `unit` in one hierarchy: system.slice's, else any (a user's, a nested
    slice's)."""
    usual = root / "system.slice" / unit
    if usual.is_dir():
        return [usual]
    return [Path(top, unit) for top, folders, _ in os.walk(root) if unit in folders]
