"""The languages' own tools beside perf, over the processes a window records: each JVM writes a
perf map of its JIT-compiled code (jcmd), each Python process gets a py-spy of its own, and a
node that writes no perf map gets a note. Module window starts them with its recorders and
adds the runtimes it finds as the window goes."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from hone.diagnose import nodejs, threads
from hone.diagnose.descendants import alive, parent
from hone.diagnose.fold import Frame
from hone.diagnose.jobs import Job, Processes
from hone.diagnose.probe import tool_path
from hone.diagnose.profile import Profile
from hone.errors import HoneError


def _py_spy(
    run: Callable[..., subprocess.CompletedProcess], argv: list[str], data: Path
) -> Callable[[], str]:
    """py-spy record, its raw output once it has ended (module threads parses it)."""

    def work() -> str:
        done = run(argv)
        if not data.exists():
            lines = (done.stderr.strip() or done.stdout.strip()).splitlines() or ["no output"]
            raise HoneError(f"py-spy record failed: {lines[-1]}")
        return data.read_text()

    return work


#: At most this many JVMs of a diagnosis are named by jstack and mapped by jcmd (the main
#: process first): each attach starts a JVM of its own, a second of CPU or two.
JVMS = 4


class PerfMap:
    """Has each JVM write /tmp/perf-PID.map (jcmd Compiler.perfmap), from which perf script names
    JIT-compiled frames: once as the window starts (should the JVM end with it) and again just
    before perf script reads the on-CPU samples. Each write replaces the file, so it is the last
    one that names the code compiled during the window; writes every 2 s through the window
    left the code compiled after the last of them unnamed, more often on a busy machine.
    The JVMs are the main process and those among the others recorded (a cluster's brokers
    under a shell script, a service's second JVM), added as the window finds them."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = list(pids)
        self.jcmd = tool_path("jcmd")
        self.written: set[int] = set()
        self.lock = threading.Lock()  # the last write comes after the first has ended

    @property
    def wanted(self) -> bool:
        return bool(self.pids)

    def add(self, pids: list[int]) -> None:
        """The JVMs among `pids` (a wrapper that has exec'd java, a JVM forked in the window).
        Not under the lock: a write holds it for a second or more, the window's loop calls this."""
        for pid in pids:
            if (
                len(self.pids) < JVMS
                and pid not in self.pids
                and threads.language_of(pid) == "java"
            ):
                self.pids.append(pid)

    def write(self) -> None:
        with self.lock:
            for pid in list(self.pids):
                if self.jcmd and alive(pid) and threads.jvm_attachable(pid):
                    done = subprocess.run([self.jcmd, str(pid), "Compiler.perfmap"],
                                          capture_output=True, text=True, check=False)  # fmt: skip
                    if done.returncode == 0:
                        self.written.add(pid)

    def note(self) -> str:
        if not self.jcmd:
            return "jcmd not found: Java JIT frames stay unnamed in perf stacks"
        if not self.written:
            return "jcmd Compiler.perfmap failed: Java JIT frames stay unnamed"
        maps = ", ".join(f"/tmp/perf-{pid}.map" for pid in sorted(self.written))
        failed = len(self.pids) - len(self.written)
        unnamed = f"; {failed} JVM{'s' if failed > 1 else ''} left unnamed" if failed else ""
        return f"Java JIT frames named from {maps} (jcmd Compiler.perfmap){unnamed}"


#: At most this many Python processes get a py-spy record and dump of their own (the main
#: process first, then the earliest found); each takes with it the Python processes it forks.
PYTHONS = 4


class Pythons:
    """py-spy record of the Python processes among those recorded: the main process, or the
    Python programs a native one starts (a shell script's workers, a supervisor's children),
    added as the window finds them. `--subprocesses` takes the Python processes a Python one
    forks, so a process whose parent chain leads to one taken is left to that one's py-spy.
    Given a native parent, py-spy record follows its Python descendants too, but not those of
    a service's group that are not its descendants, nor those started once all it sampled have
    ended, and py-spy dump fails on it (`Failed to find python version`): so each Python
    process is asked itself."""

    def __init__(
        self, work: Path, bound: float, frequency: int, procs: Processes, notes: list[str]
    ) -> None:
        self.work, self.bound, self.frequency = work, bound, frequency
        self.procs, self.notes = procs, notes
        self.pids: list[int] = []
        self.jobs: list[Job] = []

    def add(self, pids: list[int]) -> list[Job]:
        """The py-spy recorders of the Python processes among `pids` that none takes yet, not
        started (the window starts them)."""
        new = []
        for pid in pids:
            if (
                len(self.pids) < PYTHONS
                and pid not in self.pids
                and threads.language_of(pid) == "python"
                and not self._taken(pid)
            ):
                self.pids.append(pid)
                data = self.work / f"py-spy-{pid}.txt"
                argv = threads.py_spy_record_argv(pid, data, self.bound, self.frequency)
                if argv:
                    new.append(Job(f"py-spy {pid}", _py_spy(self.procs.run, argv, data)))
                elif len(self.pids) == 1:  # said once
                    self.notes.append("py-spy not found: no Python-level stacks")
        self.jobs += new
        return new

    def _taken(self, pid: int) -> bool:
        """Whether a py-spy takes the process already: one of its ancestors'."""
        while pid > 1:
            pid = parent(pid)
            if pid in self.pids:
                return True
        return False

    def recorded(self) -> tuple[Profile | None, set[int]]:
        """The recordings' samples as one profile (None when none worked) and the processes
        sampled. Their lines are parsed together, each naming its process, so that with more
        than one process sampled each thread is `name-PID`, whichever py-spy sampled it."""
        text = "\n".join(job.result for job in self.jobs if isinstance(job.result, str))
        if not text:
            return None, set()
        stacks = threads.parse_py_spy_raw(text)
        profile = Profile(
            stacks={
                (t, tuple(Frame(f, m) for f, m in frames)): n for (t, frames), n in stacks.items()
            },
            event="py-spy",
        )
        return profile, threads.py_spy_processes(text)


def language_jobs(
    pid: int, language: str, pythons: Pythons, perf_map: PerfMap, notes: list[str]
) -> dict[str, Job]:
    """py-spy for Python, the perf map for Java, a note for node writing no perf map: when the
    process starts, or later when a wrapper (a shell script, pyenv's `python3` shim) has exec'd
    the runtime."""
    jobs = {job.name: job for job in pythons.add([pid])} if language == "python" else {}
    if language == "node" and (unnamed := nodejs.unnamed_note(pid)):
        notes.append(unnamed)
    if language == "java":
        perf_map.add([pid])
        jobs["perfmap"] = Job("perfmap", perf_map.write)
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            cmdline = ""
        if "PreserveFramePointer" not in cmdline:
            notes.append("Java without -XX:+PreserveFramePointer: JIT stacks may be cut short")
    return jobs


def keep_perf_maps(pids: Iterable[int], folder: Path | None) -> list[Path]:
    """The JIT perf maps (`/tmp/perf-PID.map`: a JVM's, node's) of the given processes that have
    ended, moved into `folder` beside perf.data (removed without one), where they were read:
    nothing else removes them, a later process given the same pid would be named by a stale
    map, and a run of the test suite had left 312 in /tmp. perf reads them only from /tmp:
    `perf script -i perf.data` names JIT frames again once they are copied back."""
    moved = []
    for pid in pids:
        found = Path(f"/tmp/perf-{pid}.map")
        if alive(pid) or not found.is_file():
            continue
        with contextlib.suppress(OSError):
            if folder is None:
                found.unlink()
            else:
                moved.append(Path(shutil.move(found, folder / found.name)))
    return moved
