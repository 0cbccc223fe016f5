"""Hot threads: per-thread CPU and run-queue wait over a window (`top -Hp` done right).

CPU time and run-queue wait come from /proc/PID/task/TID/schedstat (nanoseconds, exact), with
utime+stime from .../stat as the fallback; the thread state (R, S, D) is sampled through the window
so that time off the CPU splits into I/O wait (D) and sleep. The threads are those of every process
the window records (nginx's workers, a service's processes), each thread naming its process.
Threads are named by language: Java names from jstack (nid = the thread id in hex), Python names
from py-spy dump (native ids)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hone.diagnose.golang import is_go
from hone.diagnose.machine import describe
from hone.diagnose.probe import tool_path

TICK = os.sysconf("SC_CLK_TCK")
#: Thread states of a task that has exited: a zombie (Z) or one being reaped (X).
DEAD = ("Z", "X")


@dataclass
class TaskSnapshot:
    comm: str
    state: str
    cpu_ns: int
    runq_ns: int
    user_ticks: int
    sys_ticks: int
    slices: int = 0  # times it was scheduled in (schedstat's third field)


@dataclass
class ThreadStat:
    """One thread's share of the window, in percent of one CPU (a thread that lived through only
    part of the window has shares that sum to less than 100)."""

    tid: int
    comm: str
    cpu_pct: float
    user_pct: float
    sys_pct: float
    runq_pct: float
    io_pct: float
    sleep_pct: float
    name: str = ""  # the language-level name (Java, Python) when known
    frames: list[str] = field(default_factory=list)  # its top frames from jstack or py-spy
    runq_wait_us: float = 0.0  # mean wait in the run queue each time it was scheduled in
    pid: int = 0  # its process (0: a diagnosis saved before threads named their process)
    process: str = ""  # that process as `pid 12 (nginx: worker process)`

    @property
    def label(self) -> str:
        return self.name or self.comm

    def to_dict(self) -> dict:
        return asdict(self)


def read_task(task: Path) -> TaskSnapshot | None:
    """One thread's counters; None when it exited between listing and reading."""
    try:
        stat = (task / "stat").read_text(errors="replace")
        schedstat = (
            (task / "schedstat").read_text().split() if (task / "schedstat").exists() else []
        )
    except (FileNotFoundError, ProcessLookupError):
        return None
    comm = stat[stat.index("(") + 1 : stat.rindex(")")]
    rest = stat[stat.rindex(")") + 2 :].split()
    user, system = int(rest[11]), int(rest[12])
    cpu_ns = int(schedstat[0]) if schedstat else (user + system) * 1_000_000_000 // TICK
    runq_ns = int(schedstat[1]) if schedstat else 0
    slices = int(schedstat[2]) if len(schedstat) > 2 else 0
    return TaskSnapshot(comm, rest[0], cpu_ns, runq_ns, user, system, slices)


def snapshot(pid: int) -> dict[int, TaskSnapshot]:
    tasks: dict[int, TaskSnapshot] = {}
    try:
        entries = list(Path(f"/proc/{pid}/task").iterdir())
    except FileNotFoundError:
        return tasks
    for task in entries:
        snap = read_task(task)
        if snap:
            tasks[int(task.name)] = snap
    return tasks


class ThreadSampler:
    """Samples the threads of some processes in the background from start() to stop(); those
    that `follow` adds (born in the window) from then on."""

    def __init__(self, pids: list[int], interval: float = 0.05) -> None:
        self.pids = list(dict.fromkeys(pids))
        self.owner: dict[int, int] = {}  # tid -> pid
        self.processes: dict[int, str] = {}  # pid -> `pid 12 (command)`, as first seen
        self.interval = interval
        self.first: dict[int, TaskSnapshot] = {}
        self.last: dict[int, TaskSnapshot] = {}
        self.states: dict[int, dict[str, int]] = {}
        self.seen: dict[int, tuple[float, float]] = {}  # tid -> (first, last) time seen
        self.started = 0.0
        self.elapsed = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def follow(self, pids: list[int]) -> None:
        """Sample these processes too (a worker forked in the window)."""
        self.pids += [pid for pid in pids if pid not in self.pids]

    def _snapshot(self) -> dict[int, TaskSnapshot]:
        """The threads of every process, noting each thread's process."""
        tasks: dict[int, TaskSnapshot] = {}
        for pid in list(self.pids):
            found = snapshot(pid)
            if found and pid not in self.processes:
                self.processes[pid] = describe(pid)
            for tid in found:
                self.owner[tid] = pid
            tasks.update(found)
        return tasks

    def start(self) -> ThreadSampler:
        self.first = self._snapshot()
        self.started = time.monotonic()
        self.seen = {
            tid: (self.started, self.started)
            for tid, snap in self.first.items()
            if snap.state not in DEAD
        }
        self._thread.start()
        return self

    def _note(self, tasks: dict[int, TaskSnapshot], now: float) -> None:
        """Keep each thread's latest counters; extend its life only while it is not a zombie
        (a process that exited stays listed until its parent reaps it, off the CPU but not
        asleep: counting that time as sleep made a command that computed until its exit look
        idle)."""
        for tid, snap in tasks.items():
            self.last[tid] = snap
            if snap.state not in DEAD:
                self.seen[tid] = (self.seen.get(tid, (now, now))[0], now)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            tasks = self._snapshot()
            self._note(tasks, time.monotonic())
            for tid, snap in tasks.items():
                if snap.state not in DEAD:
                    counts = self.states.setdefault(tid, {})
                    counts[snap.state] = counts.get(snap.state, 0) + 1

    def stopped_share(self, tid: int) -> float:
        """The share of the thread's state samples in which it was stopped (T: SIGSTOP or
        Ctrl-Z; t: held by a debugger), which the shares count as sleep."""
        states = self.states.get(tid, {})
        samples = sum(states.values())
        return (states.get("T", 0) + states.get("t", 0)) / samples if samples else 0.0

    def stop(self) -> list[ThreadStat]:
        self._stop.set()
        self._thread.join()
        now = time.monotonic()
        self.elapsed = now - self.started
        self._note(self._snapshot(), now)
        for pid in self.processes:  # as they are now: a wrapper has exec'd its program since
            described = describe(pid)
            if not described.startswith(f"pid {pid} ([") and "(" in described:
                self.processes[pid] = described
        return self.stats()

    def stats(self) -> list[ThreadStat]:
        window_ns = max(self.elapsed, 1e-9) * 1e9
        window_ticks = max(self.elapsed, 1e-9) * TICK
        zero = TaskSnapshot("", "", 0, 0, 0, 0)
        out = []
        for tid, end in self.last.items():
            start = self.first.get(tid, zero)  # a thread born in the window started at zero
            cpu = min(100.0, 100 * (end.cpu_ns - start.cpu_ns) / window_ns)
            runq = min(100.0 - cpu, 100 * (end.runq_ns - start.runq_ns) / window_ns)
            states = self.states.get(tid, {})
            samples = sum(states.values())
            # A thread born or gone within the window was off the CPU only while it existed.
            off = max(0.0, self._lived(tid) - cpu - runq)
            io_share = states.get("D", 0) / samples if samples else 0.0
            asleep = sum(n for s, n in states.items() if s not in "RD") / samples if samples else 0
            io = off * io_share / (io_share + asleep) if io_share + asleep else 0.0
            out.append(
                ThreadStat(
                    tid=tid,
                    comm=end.comm,
                    cpu_pct=round(cpu, 2),
                    user_pct=round(100 * (end.user_ticks - start.user_ticks) / window_ticks, 2),
                    sys_pct=round(100 * (end.sys_ticks - start.sys_ticks) / window_ticks, 2),
                    runq_pct=round(runq, 2),
                    io_pct=round(io, 2),
                    sleep_pct=round(off - io, 2),
                    runq_wait_us=round((end.runq_ns - start.runq_ns) / 1000 / slices, 1)
                    if (slices := end.slices - start.slices) > 0
                    else 0.0,
                    pid=self.owner[tid],
                    process=self.processes.get(self.owner[tid], f"pid {self.owner[tid]}"),
                )
            )
        return sorted(out, key=lambda t: (-t.cpu_pct, t.tid))

    def _lived(self, tid: int) -> float:
        """The percent of the window the thread existed and had not exited: from its first look
        alive (the window's start when it was there then, else up to one interval before) to its
        last (the window's end when it was alive then, else up to one interval after)."""
        if tid not in self.seen:
            return 0.0  # only ever seen as a zombie
        first, last = self.seen[tid]
        end = self.started + self.elapsed
        born = self.started if first <= self.started else max(self.started, first - self.interval)
        gone = min(end, last + self.interval)
        return 100.0 * min(1.0, max(0.0, gone - born) / max(self.elapsed, 1e-9))


def parse_jstack(text: str) -> dict[int, tuple[str, list[str]]]:
    """tid -> (Java thread name, top frames) from jstack output (nid in hex, or decimal on 19+)."""
    threads: dict[int, tuple[str, list[str]]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        head = re.match(r'^"(?P<name>.*)" .*\bnid=(?P<nid>0x[0-9a-fA-F]+|\d+)\b', line)
        if head:
            nid = head["nid"]
            tid = int(nid, 16) if nid.startswith("0x") else int(nid)
            current = []
            threads[tid] = (head["name"], current)
            continue
        frame = re.match(r"^\s+at (.+)$", line)
        if frame and current is not None and len(current) < 5:
            current.append(frame[1])
        elif not line.strip():
            current = None
    return threads


def parse_py_spy(text: str) -> dict[int, tuple[str, list[str]]]:
    """tid -> (Python thread name, top frames) from `py-spy dump` output."""
    threads: dict[int, tuple[str, list[str]]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        head = re.match(r'^Thread (0x[0-9A-Fa-f]+|\d+) \([^)]*\)(?:: "(.*)")?', line)
        if head:
            ident = head[1]
            tid = int(ident, 16) if ident.startswith("0x") else int(ident)
            current = []
            threads[tid] = (head[2] or "", current)
            continue
        if current is not None and line.startswith("    ") and len(current) < 5:
            current.append(line.strip())
    return threads


#: Whether each executable (device, inode) is Go's: the window asks of every process it follows
#: at each look, and the answer for a binary does not change (a pid that execs another has
#: another inode).
_GO: dict[tuple[int, int], bool] = {}


def language_of(pid: int) -> str:
    """go, java, python, node or native: Go by its executable's build info (module golang),
    which a name cannot fake (Prometheus' node_exporter is Go), the others by its name."""
    link = f"/proc/{pid}/exe"
    try:
        exe = os.path.basename(os.readlink(link))
        binary = os.stat(link)
    except OSError:
        return "native"
    key = (binary.st_dev, binary.st_ino)
    if key not in _GO:
        _GO[key] = is_go(link)
    if _GO[key]:
        return "go"
    if exe == "java":
        return "java"
    if exe.startswith("python") or exe.startswith("pypy"):
        return "python"
    if exe in ("node", "nodejs"):
        return "node"
    return "native"


def parse_blocked(text: str) -> dict[str, tuple[str, str]]:
    """Java threads blocked on a monitor in jstack output: name -> (monitor, frame), the monitor
    as `java.lang.Object <0x000000069ec194a0>` and the frame that waits to lock it."""
    blocked: dict[str, tuple[str, str]] = {}
    name, frame = "", ""
    for line in text.splitlines():
        head = re.match(r'^"(.*)" ', line)
        if head:
            name, frame = head[1], ""
        at = re.match(r"^\s+at (.+)$", line)
        if at:
            frame = frame or at[1]
        waiting = re.match(r"^\s+- waiting to lock <(0x[0-9a-f]+)> \(a (.+)\)", line)
        if waiting and name:
            blocked[name] = (f"{waiting[2]} <{waiting[1]}>", frame)
    return blocked


def jvm_attachable(pid: int, wait: float = 15.0) -> bool:
    """Wait (at most `wait` s) until the JVM catches SIGQUIT. jstack and jcmd attach by sending
    SIGQUIT; until HotSpot installs its handler, early in its start, that signal's default action
    ends the JVM (exit code 131), and a JVM that hone holds stopped keeps the signal pending and
    dies of it when continued: `hone diagnose -- java ...` killed the program it diagnosed."""
    deadline = time.monotonic() + wait
    while True:
        try:
            status = Path(f"/proc/{pid}/status").read_text(errors="replace")
        except OSError:
            return False
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("State", "Z").split()[0] in DEAD:
            return False
        if int(fields.get("SigCgt", "0").strip() or "0", 16) & (1 << (signal.SIGQUIT - 1)):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def language_names(pid: int, language: str) -> tuple[dict[int, tuple[str, list[str]]], str, str]:
    """Thread names from the language's own tool, with a note saying what was used or missing,
    and the tool's output (jstack's also says which threads are blocked on which monitor)."""
    tool = {"java": "jstack", "python": "py-spy"}.get(language)
    if not tool:
        return {}, "", ""
    path = tool_path(tool)
    if not path:
        return {}, f"{tool} not found: {language} thread names unavailable", ""
    if tool == "jstack" and not jvm_attachable(pid):
        return {}, "the JVM did not take attach requests (no SIGQUIT handler): no jstack", ""
    # py-spy names the threads of the processes it forks too (a pool's or a server's workers)
    dump = [path, "dump", "--pid", str(pid), "--subprocesses"]
    argv = [path, str(pid)] if tool == "jstack" else dump
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except subprocess.TimeoutExpired:
        return {}, f"{tool} timed out", ""
    parsed = parse_jstack(done.stdout) if tool == "jstack" else parse_py_spy(done.stdout)
    if not parsed:
        note = f"{tool} gave no threads (exit {done.returncode}): {done.stderr.strip()[:160]}"
        return {}, note, ""
    return parsed, f"{language} thread names from {tool} ({len(parsed)} threads)", done.stdout


def name_threads(stats: list[ThreadStat], names: dict[int, tuple[str, list[str]]]) -> None:
    for stat in stats:
        if stat.tid in names:
            stat.name, stat.frames = names[stat.tid][0], list(names[stat.tid][1])


def py_spy_record_argv(pid: int, output: Path, duration: float, rate: int) -> list[str] | None:
    """py-spy sampling the Python stacks of the busy threads (idle ones are left out) of the
    process and of the processes it forks (a server's workers, a multiprocessing pool): in a
    pre-fork server the process given is an idle parent and the work is in its children."""
    path = tool_path("py-spy")
    if not path:
        return None
    return [
        path, "record", "--pid", str(pid), "--duration", str(max(1, round(duration))),
        "--rate", str(rate), "--format", "raw", "--output", str(output), "--threads",
        "--nonblocking", "--subprocesses",
    ]  # fmt: skip


PY_FRAME = re.compile(r"^(?P<function>.*) \((?P<file>[^()]*?)(?::\d+)?\)$")
PY_THREAD = re.compile(r"^thread \(\d+\): ")
PY_PROCESS = re.compile(r'^process (?P<pid>\d+):"')


def _py_spy_lines(text: str) -> list[tuple[str, str, list[str], int]]:
    """`py-spy record --format raw --threads [--subprocesses]` lines as (thread name, its
    process's pid or "", frames, samples). With `--subprocesses` a line starts with its
    process's ancestry (`process PID:"command line"` frames, whose command line may hold `;`)."""
    lines: list[tuple[str, str, list[str], int]] = []
    for line in text.splitlines():
        body, _, count = line.rpartition(" ")
        if not body or not count.isdigit():
            continue
        pieces = body.split(";")
        at = next((i for i, piece in enumerate(pieces) if PY_THREAD.match(piece)), 0)
        pids = [m["pid"] for piece in pieces[:at] if (m := PY_PROCESS.match(piece))]
        root, *frames = pieces[at:]
        thread = root.split(": ", 1)[1] if ": " in root else root
        lines.append((thread, pids[-1] if pids else "", frames, int(count)))
    return lines


def py_spy_processes(text: str) -> set[int]:
    """The processes whose samples `py-spy record --subprocesses` raw lines hold."""
    return {int(pid) for _, pid, _, _ in _py_spy_lines(text) if pid}


def parse_py_spy_raw(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], int]:
    """`py-spy record --format raw --threads [--subprocesses]` lines -> {(thread name,
    ((function, file), ...)): samples}, root first, line numbers dropped so that a function is
    one frame. When the samples are of more than one process (`--subprocesses`) each thread is
    named `name-PID`, as perf's root frames are."""
    lines = _py_spy_lines(text)
    several = len({pid for _, pid, _, _ in lines}) > 1
    stacks: dict[tuple[str, tuple[tuple[str, str], ...]], int] = {}
    for thread, pid, frames, count in lines:
        parsed = []
        for frame in frames:
            match = PY_FRAME.match(frame)
            parsed.append((match["function"], match["file"]) if match else (frame, ""))
        key = (f"{thread}-{pid}" if several else thread, tuple(parsed))
        stacks[key] = stacks.get(key, 0) + count
    return stacks
