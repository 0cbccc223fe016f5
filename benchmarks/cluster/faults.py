"""The fault figure: kill -9 of a `hone worker` and of a cluster's controller at chosen points of
a trial, and a host's sshd stopped mid-trial; after each, the recovery (`hone restore`) and a
check that every knob on every machine and host is back to its original.

    python -m benchmarks.cluster.faults [--points worker:before-apply controller:roll-back ...]

How a point is reached: the project's own commands (a shell knob's get and set, the benchmark,
a metric command) pass through a gate, `gate.sh POINT [HOST]`, which does nothing unless the
point is armed. An armed gate marks that it was reached and waits; the harness then kills hone's
whole process group with SIGKILL (hone and the commands it started; commands on hosts run on,
as they would after a real kill, until the harness opens their gate: they then fail, so nothing
runs after the kill that the recovery could miss). The worker's points run on a PostgreSQL
cluster started here; the controller's on a 3-host namespace test bed
(benchmarks/cluster/netns.py). After `hone restore`, a killed worker is started again: it fails
its predecessor's trial at once and finishes the study (checked in the database)."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks.cluster.netns import Testbed, available

WORKER_POINTS = ("before-apply", "after-apply", "during-benchmark", "during-report")
CONTROLLER_POINTS = ("prepare", "mid-apply", "during-benchmark", "roll-back", "sshd-stopped")
CONFIG = "threads = 4\nbatch = 100\n"
GATE = """\
#!/bin/sh
# gate.sh POINT [HOST]: a no-op unless arm.POINT exists (holding the host to stop on, or
# empty for any). Armed: the first caller makes at.POINT and waits while it exists (at most
# 60 s); then it succeeds if ok.POINT exists, else fails (the command after it never runs).
d=$(dirname "$0")
[ -e "$d/arm.$1" ] || exit 0
who=$(cat "$d/arm.$1")
[ -z "$who" ] || [ "$who" = "$2" ] || exit 0
mkdir "$d/at.$1" 2>/dev/null || exit 0
n=0
while [ -d "$d/at.$1" ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n + 1)); done
[ -e "$d/ok.$1" ]
"""


@dataclass
class Outcome:
    point: str
    reached: bool  # the gate was reached and hone killed (or the sshd stopped) there
    changed: bool  # something was left changed by the fault (what the recovery had to undo)
    restored: bool  # every knob back to its original after the recovery
    detail: str = ""


class Gates:
    """The gate script and its marker files, in a folder every host and this machine see."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.script = folder / "gate.sh"
        self.script.write_text(GATE)

    def arm(self, point: str, host: str = "") -> None:
        (self.folder / f"arm.{point}").write_text(host)

    def wait(self, point: str, proc: subprocess.Popen, timeout: float = 60.0) -> bool:
        deadline = time.monotonic() + timeout
        while not (self.folder / f"at.{point}").is_dir():
            if proc.poll() is not None or time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def release(self, ok: bool = False) -> None:
        """Disarm every point and open every waiting gate (failing it unless `ok`)."""
        for path in self.folder.glob("arm.*"):
            path.unlink()
        if ok:
            for path in self.folder.glob("at.*"):
                (self.folder / f"ok.{path.name[3:]}").touch()
        for path in self.folder.glob("at.*"):
            path.rmdir()
        time.sleep(0.2)  # the waiting gates see it within 50 ms
        for path in self.folder.glob("ok.*"):
            path.unlink()
        for path in self.folder.glob("failed"):
            path.unlink()
        for path in self.folder.glob("refuse.*"):
            path.unlink()


def hone(home: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hone", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "HONE_HOME": str(home)},
    )


def start(home: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "hone", *args],
        env={**os.environ, "HONE_HOME": str(home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: the kill takes its children too
    )


def kill(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)


def missed(name: str, proc: subprocess.Popen, gates: Gates) -> Outcome:
    """A kill point the run never reached: stop it and keep the end of its output."""
    if proc.poll() is None:
        kill(proc)
    out = proc.communicate(timeout=60)[0].decode()[-300:]
    gates.release()
    return Outcome(name, False, False, False, out)


# -- a hone worker --------------------------------------------------------------------------


def worker_machine(folder: Path, gates: Gates) -> Path:
    """Three knobs applied in this order: a shell knob gated before its write (nothing of the
    trial applied yet), a config-file key, a shell knob gated after its write (everything
    applied). Every knob's original (0) is outside its range, so a search trial changes all."""
    folder.mkdir(parents=True)
    for name in ("mode.txt", "tail.txt"):
        (folder / name).write_text("0")
    (folder / "app.conf").write_text("level 0\n")
    g = gates.script
    searching = '[ "$(cat mode.txt)" = 0 ] ||'
    (folder / "score.sh").write_text(
        f"{searching} sh {g} during-report || exit 1\nawk '/score/ {{print $2}}'\n"
    )
    (folder / "hone.yaml").write_text(
        textwrap.dedent(f"""\
        name: faults
        knobs:
          mode:
            type: int
            range: [1, 9]
            shell:
              get: cat mode.txt
              set: >-
                [ "$value" = 0 ] || sh {g} before-apply || exit 1;
                printf %s "$value" > mode.txt
          level:
            type: int
            range: [1, 9]
            config: {{file: app.conf, format: space, key: level}}
          tail:
            type: int
            range: [1, 9]
            shell:
              get: cat tail.txt
              set: 'printf %s "$value" > tail.txt; [ "$value" = 0 ] || sh {g} after-apply'
        benchmark:
          command: '{searching} sh {g} during-benchmark || exit 1; echo score: 5'
          timeout: 90
        metrics:
          score: {{command: 'echo "$out" | sh score.sh', direction: maximize}}
        tuning: {{engine: random, budget: 2, baseline: 1, seed: 1, apply: never}}
        """)
    )
    return folder


def worker_state(folder: Path) -> tuple[str, str, str]:
    return tuple(  # type: ignore[return-value]
        (folder / n).read_text() for n in ("mode.txt", "app.conf", "tail.txt")
    )


def worker_point(url: str, root: Path, point: str) -> Outcome:
    """Kill a worker at `point` of its first search trial, restore, start it again."""
    from hone.storage import StudyStore
    from hone.storage.summary import read_trials

    gates = Gates(root / "gates")
    folder = worker_machine(root / "machine", gates)
    home = folder / "home"
    original = worker_state(folder)
    worker = ("worker", str(folder), "--storage", url, "--worker-id", "m1", "--lease", "2")
    gates.arm(point)
    proc = start(home, *worker)
    reached = gates.wait(point, proc)
    if not reached:
        return missed(f"worker {point}", proc, gates)
    kill(proc)
    changed = worker_state(folder) != original
    gates.release()
    restored = hone(home, "restore", str(folder))
    back = restored.returncode == 0 and worker_state(folder) == original
    again = hone(home, *worker)  # the same worker again: it cuts its predecessor's trial off
    store = StudyStore(url)
    trials = read_trials(store, store.find("faults"))
    lost = [t for t in trials if t.lost]
    finished = store.find("faults").state == "finished"
    good = (
        back
        and again.returncode == 0
        and finished
        and len(lost) == 1
        and not [t for t in trials if t.state == "running"]
        and worker_state(folder) == original
    )
    detail = "" if good else (restored.stdout + restored.stderr + again.stderr)[-300:]
    return Outcome(f"worker {point}", True, changed, good, detail)


# -- a cluster's controller -----------------------------------------------------------------


def controller_project(path: Path, bed: Testbed, gates: Gates) -> Path:
    """Three knobs on all three hosts, written on each host in this order: a net.* sysctl, a
    config file, and a shell knob whose get and set pass gates (set may also be refused on a
    host, to force a roll-back). The benchmark runs on h1, gated while a trial's values hold."""
    g, m = gates.script, bed.mount
    me = f"$(cat {m}/name)"
    get = (
        f"[ ! -e {gates.folder}/failed ] || sh {g} roll-back {me} || exit 1; "
        f"sh {g} prepare {me} || exit 1; cat {m}/mode.txt"
    )
    set_ = (
        f"sh {g} mid-apply {me} || exit 1; "
        f"[ ! -e {gates.folder}/refuse.{me} ] || {{ touch {gates.folder}/failed; "
        "echo refused >&2; exit 1; }; "
        f'printf %s "$value" > {m}/mode.txt'
    )
    bench = f'[ "$(cat {m}/mode.txt)" = 0 ] || sh {g} during-benchmark || exit 1; echo score: 1'
    path.write_text(
        "name: faults-cluster\n" + bed.hosts_yaml({"brokers": list(range(bed.count))}) + "knobs:\n"
        "  backlog: {type: int, range: [128, 1024], sysctl: net.core.somaxconn, group: brokers}\n"
        f"  threads: {{type: int, range: [1, 16], config: {{file: {m}/app.conf, key: threads}},"
        " group: brokers}\n"
        "  mode:\n    type: int\n    range: [1, 9]\n    group: brokers\n"
        f"    shell:\n      get: {_yaml(get)}\n      set: {_yaml(set_)}\n"
        f"benchmark: {{command: {_yaml(bench)}, host: h1, timeout: 90}}\n"
        "metrics:\n  score: {pattern: 'score: (\\d+)', direction: maximize}\n"
        "tuning: {engine: random, budget: 2, baseline: 1, seed: 1, apply: never}\n"
    )
    return path


def _yaml(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def reset_hosts(bed: Testbed) -> None:
    for i in range(bed.count):
        (bed.data(i) / "name").write_text(bed.name(i))
        (bed.data(i) / "app.conf").write_text(CONFIG)
        (bed.data(i) / "mode.txt").write_text("0")
        bed.set_sysctl(i, "net.core.somaxconn", "4096")


def host_state(bed: Testbed) -> list[tuple[str, str, str]]:
    return [
        (
            bed.sysctl(i, "net.core.somaxconn"),
            (bed.data(i) / "app.conf").read_text(),
            (bed.data(i) / "mode.txt").read_text(),
        )
        for i in range(bed.count)
    ]


#: point -> (the gate armed, the host it stops on); sshd-stopped stops h3's sshd during the
#: benchmark instead of killing hone.
ARMS = {
    "prepare": ("prepare", "h2"),
    "mid-apply": ("mid-apply", "h2"),
    "during-benchmark": ("during-benchmark", ""),
    "roll-back": ("roll-back", "h1"),
    "sshd-stopped": ("during-benchmark", ""),
}


def controller_point(bed: Testbed, root: Path, point: str, home: Path | None = None) -> Outcome:
    """Kill the controller (`hone tune`) at `point`, or stop a host's sshd there; then
    `hone restore` on the controller brings every host back. `home` is its HONE_HOME (short:
    the ssh sockets live there)."""
    gates = Gates(bed.root / "gates")
    home = home or root / "home"
    root.mkdir(parents=True)
    path = controller_project(root / "hone.yaml", bed, gates)
    reset_hosts(bed)
    original = host_state(bed)
    gate, host = ARMS[point]
    gates.arm(gate, host)
    if point == "roll-back":
        (gates.folder / "refuse.h3").touch()  # h3 refuses the trial's value
    proc = start(home, "tune", str(path))
    reached = gates.wait(gate, proc)
    if not reached:
        return missed(f"controller {point}", proc, gates)
    said = ""
    if point == "sshd-stopped":
        bed.stop_sshd(2)
        gates.release(ok=True)  # the benchmark ends well; h3 is gone for what follows
        try:
            said = proc.communicate(timeout=120)[0].decode()
        finally:
            bed.start_sshd(2)
    else:
        kill(proc)
        gates.release()
    changed = host_state(bed) != original
    restored = hone(home, "restore", "faults-cluster")
    left = [p for p in home.glob("journal/*@*.jsonl") if not p.name.endswith(".done.jsonl")]
    good = restored.returncode == 0 and host_state(bed) == original and not left
    if point == "sshd-stopped":  # hone stopped itself naming h3, which kept its journal
        good = good and proc.returncode != 0 and "h3" in said
    detail = "" if good else (said + restored.stdout + restored.stderr)[-400:]
    return Outcome(f"controller {point}", True, changed, good, detail)


# -- the figure -----------------------------------------------------------------------------


def run_points(points: list[str], log: Callable[[Outcome], None] = print) -> list[Outcome]:
    from benchmarks.tune.postgres import cluster

    outcomes = []
    with tempfile.TemporaryDirectory(prefix="hone-faults-") as tmp:
        workers = [p.split(":", 1)[1] for p in points if p.startswith("worker:")]
        controllers = [p.split(":", 1)[1] for p in points if p.startswith("controller:")]
        if workers:
            with cluster() as server:
                url = server.url
                for i, point in enumerate(workers):
                    outcome = worker_point(url, Path(tmp) / f"w{i}", point)
                    _drop_studies(url)
                    outcomes.append(outcome)
                    log(outcome)
        if controllers:
            why = available()
            if why:
                raise SystemExit(f"no namespace test bed: {why}")
            bed = Testbed(Path(tmp) / "bed", 3).up()
            try:
                for i, point in enumerate(controllers):
                    outcome = controller_point(bed, Path(tmp) / f"c{i}", point)
                    outcomes.append(outcome)
                    log(outcome)
            finally:
                bed.down()
    return outcomes


def _drop_studies(url: str) -> None:
    """Each point starts a study of its own."""
    from hone.storage import StudyStore

    store = StudyStore(url)
    for study in store.studies():
        store.storage.delete_study(study.study_id)


def main() -> None:
    every = [f"worker:{p}" for p in WORKER_POINTS] + [f"controller:{p}" for p in CONTROLLER_POINTS]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", nargs="+", default=every, choices=every)
    args = parser.parse_args()
    started = time.monotonic()
    print("| fault | point reached | left changed | every knob restored |")
    print("|---|---|---|---|")

    def log(o: Outcome) -> None:
        cells = [o.point, _yes(o.reached), _yes(o.changed), _yes(o.restored)]
        print("| " + " | ".join(cells) + " |" + (f" {o.detail!r}" if o.detail else ""))

    outcomes = run_points(args.points, log)
    good = sum(o.reached and o.restored for o in outcomes)
    print(
        f"{good} of {len(outcomes)} kill points recovered, every knob restored"
        if good == len(outcomes)
        else f"{good} of {len(outcomes)} kill points recovered"
    )
    print(f"({time.monotonic() - started:.0f} s, load {os.getloadavg()[0]:.1f})")
    raise SystemExit(0 if good == len(outcomes) else 1)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


if __name__ == "__main__":
    main()
