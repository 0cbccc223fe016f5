"""Off-CPU time from sched:sched_switch with stacks, and run-queue latency.

A thread's off-CPU interval runs from its switch-out (the event fires in its own context, so the
stack is where it blocked) to its next switch-in (sched_switch fires that in another task's
context, which a recording of the process alone does not see: `--switch-events` gives it as a
PERF_RECORD_SWITCH IN record instead). The interval is charged to the switch-out stack and
classed by the state the thread left in: R = preempted (waiting in the run queue), D =
uninterruptible (mostly I/O), S and others = sleeping or waiting on something; from its wake-up,
when that is known, the thread waits in the run queue, and that part is charged as such. A thread
still off the CPU when the recording ends is charged up to its end. Run-queue latency is wake-up (or
preemption) to switch-in. Kprobes are not needed (no offcputime-bpf)."""

from __future__ import annotations

import re
import statistics
import subprocess
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hone.diagnose.perf_record import scratch_record, timer
from hone.errors import HoneError

HEADER = re.compile(
    r"^(?P<comm>.+?)\s+(?:(?P<pid>-?\d+)/)?(?P<tid>-?\d+)\s+(?:\[\d+\]\s+)?"
    r"(?P<time>\d+\.\d+):\s+(?:\d+\s+)?(?P<event>[\w-]+:[\w-]+):\s?(?P<trace>.*)$"
)
FRAME = re.compile(r"^\s+(?P<ip>[0-9a-f]+)\s+(?P<sym>.*?)\s+\((?P<dso>.*)\)$")
SWITCH = re.compile(
    r"prev_comm=(?P<prev_comm>.*) prev_pid=(?P<prev_pid>\d+) prev_prio=\d+ "
    r"prev_state=(?P<state>\S+) ==> next_comm=(?P<next_comm>.*) next_pid=(?P<next_pid>\d+)"
)
RECORD_SWITCH = re.compile(
    r"^(?P<comm>.+?)\s+(?:(?P<pid>-?\d+)/)?(?P<tid>-?\d+)\s+(?:\[\d+\]\s+)?"
    r"(?P<time>\d+\.\d+):\s+PERF_RECORD_SWITCH(?:_CPU_WIDE)?\s+(?P<dir>IN|OUT)"
)
WAKEUP = re.compile(r"comm=(?P<comm>.*) pid=(?P<pid>\d+) prio=\d+")

SCRIPT_FIELDS = "comm,pid,tid,time,event,trace,ip,sym,dso"
#: At most this much data per recording: a JVM whose threads fight over one monitor switched
#: 9 MB/s, and reading 27 MB took 6 s. Its waits per second are then over the part recorded.
MAX_SIZE = "12M"


@dataclass
class Event:
    comm: str
    pid: int
    tid: int
    time: float
    event: str
    trace: str
    stack: list[tuple[str, str]] = field(default_factory=list)  # (function, module), leaf first


def parse_events(text: str) -> Iterator[Event]:
    """Events of `perf script -F comm,pid,tid,time,event,trace,ip,sym,dso` output.

    Kept fast for a busy server's recordings (400,000 lines, 7 MB of perf data): a switch
    record is matched as one first (HEADER fails slowly on it), and each distinct frame line
    is parsed once (a few thousand distinct lines make up all the stacks)."""
    current: Event | None = None
    modules: dict[str, str] = {}  # path -> file name, computed once per module
    frames: dict[str, tuple[str, str] | None] = {}  # frame line -> its frame
    for line in text.splitlines():
        if not line or line.isspace():
            continue
        if not line[0].isspace():
            if "PERF_RECORD_SWITCH" in line:
                head = RECORD_SWITCH.match(line) or HEADER.match(line)
            else:
                head = HEADER.match(line) or RECORD_SWITCH.match(line)
            if head:
                if current:
                    yield current
                current = Event(
                    head["comm"].strip(),
                    int(head["pid"] or head["tid"]),
                    int(head["tid"]),
                    float(head["time"]),
                    head["event"] if "event" in head.re.groupindex else f"switch-{head['dir']}",
                    head["trace"] if "trace" in head.re.groupindex else "",
                )
            continue
        if current is not None:
            if line in frames:
                frame = frames[line]
            else:
                frame = frames[line] = _frame(line, modules)
            if frame:
                current.stack.append(frame)
    if current:
        yield current


class Span:
    """The times of the first and last event read through it: the window a recording covers."""

    def __init__(self) -> None:
        self.first: float | None = None
        self.last: float | None = None

    def events(self, text: str) -> Iterator[Event]:
        """`parse_events(text)`, noting the times."""
        return self.track(parse_events(text))

    def track(self, events: Iterable[Event]) -> Iterator[Event]:
        """These events, noting the times."""
        for event in events:
            if self.first is None:
                self.first = event.time
            self.last = event.time
            yield event

    @property
    def seconds(self) -> float:
        if self.first is None or self.last is None:
            return 0.0
        return round(self.last - self.first, 6)


def _frame(line: str, modules: dict[str, str]) -> tuple[str, str] | None:
    """`\t ffffffff8100 __schedule ([kernel.kallsyms])` -> (function, module file name)."""
    body = line.strip()
    ip, _, rest = body.partition(" ")
    function, _, dso = rest.rpartition(" (")
    if not dso.endswith(")") or not ip:
        frame = FRAME.match(line)  # an unusual layout: the careful way
        return (frame["sym"], Path(frame["dso"]).name or frame["dso"]) if frame else None
    dso = dso[:-1]
    module = modules.get(dso)
    if module is None:
        module = modules[dso] = dso.rsplit("/", 1)[-1] or dso
    return function.strip(), module


def frame_name(function: str, module: str) -> str:
    """The function, else `[module]`, else `[unknown]`, as on-CPU folding names frames (module
    fold, after stackcollapse-perf): a frame perf knows nothing of is not `[[unknown]]`."""
    if function and function != "[unknown]":
        return function
    return "[unknown]" if module in ("", "[unknown]") else f"[{module}]"


STATE_CLASS = {"R": "runqueue", "D": "io", "S": "sleep"}


def state_class(state: str) -> str:
    return STATE_CLASS.get(state[:1], "sleep")


@dataclass
class LatencySummary:
    count: int = 0
    total_ms: float = 0.0
    mean_us: float = 0.0
    p50_us: float = 0.0
    p99_us: float = 0.0
    max_us: float = 0.0

    @classmethod
    def of(cls, values_us: list[float]) -> LatencySummary:
        if not values_us:
            return cls()
        ordered = sorted(values_us)
        return cls(
            count=len(ordered),
            total_ms=round(sum(ordered) / 1000, 3),
            mean_us=round(statistics.fmean(ordered), 1),
            p50_us=round(ordered[len(ordered) // 2], 1),
            p99_us=round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 1),
            max_us=round(ordered[-1], 1),
        )


@dataclass
class OffCpu:
    """Off-CPU microseconds by folded stack, per state class, and run-queue latency."""

    window_s: float = 0.0
    stacks: dict[str, dict[str, float]] = field(default_factory=dict)  # class -> stack -> us
    per_thread: dict[int, dict[str, float]] = field(default_factory=dict)  # tid -> class -> us
    modules: dict[str, str] = field(default_factory=dict)  # function -> module
    runqueue: LatencySummary = field(default_factory=LatencySummary)
    capped: bool = False  # perf stopped at MAX_SIZE: window_s is less than the diagnosis's

    def total_us(self, kind: str | None = None) -> float:
        kinds = [kind] if kind else list(self.stacks)
        return sum(sum(self.stacks.get(k, {}).values()) for k in kinds)

    def folded(self, kind: str | None = None) -> dict[str, int]:
        """Folded stacks in whole microseconds (all classes, or one), for a flame graph."""
        out: dict[str, int] = {}
        for k, stacks in self.stacks.items():
            if kind and k != kind:
                continue
            for stack, us in stacks.items():
                out[stack] = out.get(stack, 0) + int(us)
        return out

    def top(self, kind: str, n: int = 5) -> list[tuple[str, float]]:
        return sorted(self.stacks.get(kind, {}).items(), key=lambda kv: -kv[1])[:n]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> OffCpu:
        per_thread = {int(k): v for k, v in data.get("per_thread", {}).items()}
        runqueue = LatencySummary(**data.get("runqueue", {}))
        return cls(
            window_s=data.get("window_s", 0.0),
            stacks=data.get("stacks", {}),
            per_thread=per_thread,
            modules=data.get("modules", {}),
            runqueue=runqueue,
            capped=data.get("capped", False),
        )


def _charge(
    result: OffCpu,
    tid: int,
    now: float,
    out: tuple[float, str, str],
    woken_at: dict[int, float],
    latencies: list[float],
) -> None:
    """Charge a finished off-CPU interval to its switch-out stack; note run-queue latency. The
    part after a known wake-up is run-queue wait, not the sleep or I/O the thread left for: a
    thread committing 8,000 fdatasyncs a second on busy CPUs was charged 0.94 thread-seconds per
    second of I/O while it sat in D 13 % of the window and waited for a CPU 80 %."""
    since, stack, kind = out
    woken = woken_at.pop(tid, None)
    parts = [(kind, since, now)]
    if woken is not None and since < woken <= now and kind != "runqueue":
        parts = [(kind, since, woken), ("runqueue", woken, now)]
    thread = result.per_thread.setdefault(tid, {})
    for part, start, end in parts:
        us = (end - start) * 1e6
        stacks = result.stacks.setdefault(part, {})
        stacks[stack] = stacks.get(stack, 0.0) + us
        thread[part] = thread.get(part, 0.0) + us
    if woken is not None:
        latencies.append((now - woken) * 1e6)


def analyse(
    text: str,
    pid: int | None,
    tids: set[int] | None = None,
    wakeups: dict[int, list[float]] | None = None,
    events: Iterable[Event] | None = None,
    per_process: bool = False,
) -> OffCpu:
    """Off-CPU intervals of process `pid` (plus any `tids`); every thread of the recording
    when `pid` is None (a recording of some processes and their children holds only theirs).
    With `per_process` and more than one process, each root frame names the thread and its
    process's pid, `nginx-2922`, as the on-CPU profile's do.

    Switch-ins come from sched_switch's next_pid (a system-wide recording) or from
    PERF_RECORD_SWITCH IN records (`--switch-events`, a recording of the process alone).
    `wakeups` (tid -> sorted times, from `record_wakeups_argv`) adds the wake-ups that other
    processes and interrupts issued, which a recording of the process alone cannot see.
    `events`, when given, are the parsed events to read instead of `text` (module pgwaits
    mends their stacks first)."""
    ours = set(tids or ())
    out_at: dict[int, tuple[float, str, str]] = {}  # tid -> (time, folded stack, class)
    woken_at: dict[int, float] = {}
    result = OffCpu()
    latencies: list[float] = []
    span = Span()
    pids: set[int] = set()
    for event in span.track(parse_events(text) if events is None else events):
        if event.event == "sched:sched_switch":
            switch = SWITCH.search(event.trace)
            if not switch:
                continue
            prev = int(switch["prev_pid"])
            if pid is None or event.pid == pid or prev in ours:
                ours.add(prev)
                names = [frame_name(function, module) for function, module in event.stack]
                for name, (_, module) in zip(names, event.stack, strict=True):
                    result.modules.setdefault(name, module)
                kind = state_class(switch["state"])
                # the folded stack: root first, the thread's name as the root frame
                root = switch["prev_comm"] + (f"-{event.pid}" if per_process else "")
                folded = ";".join([root, *reversed(names)])
                pids.add(event.pid)
                out_at[prev] = (event.time, folded, kind)
                if kind == "runqueue":
                    woken_at[prev] = event.time
            switched_in = int(switch["next_pid"])
        elif event.event == "switch-IN":
            switched_in = event.tid
        else:
            switched_in = -1
        if switched_in in out_at:
            if switched_in not in woken_at and wakeups and switched_in in wakeups:
                times = wakeups[switched_in]
                i = bisect_right(times, event.time) - 1
                if i >= 0 and times[i] >= out_at[switched_in][0]:
                    woken_at[switched_in] = times[i]
            _charge(result, switched_in, event.time, out_at.pop(switched_in), woken_at, latencies)
        if event.event == "sched:sched_wakeup":
            wake = WAKEUP.search(event.trace)
            if wake and int(wake["pid"]) in out_at:
                woken_at[int(wake["pid"])] = event.time
    if span.last is not None:
        result.window_s = span.seconds
        for tid, out in list(out_at.items()):  # still off the CPU when recording ended
            _charge(result, tid, span.last, out, {}, latencies)
    result.runqueue = LatencySummary.of(latencies)
    if per_process and len(pids) < 2:  # one process: its threads' names alone
        result.stacks = {kind: _one_process(stacks) for kind, stacks in result.stacks.items()}
    return result


def _one_process(stacks: dict[str, float]) -> dict[str, float]:
    """The stacks with the `-PID` of their root frames taken off."""
    out: dict[str, float] = {}
    for stack, us in stacks.items():
        root, _, rest = stack.partition(";")
        key = ";".join(filter(None, [root.rpartition("-")[0], rest]))
        out[key] = out.get(key, 0.0) + us
    return out


def record_argv(pids: list[int], output: Path, duration: float) -> list[str]:
    """These processes alone (and what they fork): switch-outs with stacks, switch-ins from
    --switch-events. Not quiet (-q): perf's reason when it fails, mostly that a listed process
    has ended.

    (System-wide recording would see switch-ins as next_pid too, at 100x the data.)"""
    return [
        *scratch_record(), "-p", ",".join(map(str, pids)), "-g", "--switch-events",
        "-o", str(output),
        "-e", "sched:sched_switch", "-e", "sched:sched_wakeup", "--max-size", MAX_SIZE,
        "--", *timer(duration),
    ]  # fmt: skip


def script(data: Path) -> str:
    done = subprocess.run(
        ["perf", "script", "-i", str(data), "-F", SCRIPT_FIELDS, "--show-switch-events"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise HoneError(f"perf script failed: {script_failure(done.stderr)}", file=data)
    return done.stdout


def script_failure(stderr: str) -> str:
    """perf script's reason for failing, without its warnings about the fields that other kinds
    of event lack (`'trace' not valid for hardware events. Ignoring.`): four of them came first
    and filled the note, and the reason was cut off."""
    lines = [line.strip() for line in stderr.splitlines()]
    said = " ".join(line for line in lines if line and not line.endswith("Ignoring."))
    return said[:300] or "no reason given"


#: A name perf's filter takes inside quotes as it is (no quote, backslash, space or glob).
_FILTER_SAFE = re.compile(r"[\w.:@+-]{1,15}")


#: Thread ids the kernel may hand out during a window with the threads born in it still seen.
BORN = 8192
#: The ids below this are never handed out again when the counter wraps (RESERVED_PIDS).
RESERVED = 300


def last_given() -> tuple[int, int] | None:
    """The last thread id the kernel handed out in this namespace, and its largest."""
    try:
        last = int(Path("/proc/sys/kernel/ns_last_pid").read_text())
        return last, int(Path("/proc/sys/kernel/pid_max").read_text())
    except (OSError, ValueError):
        return None


def _born_after(last: int, pid_max: int) -> str:
    """Ids handed out after `last`: upward from it, from RESERVED again after pid_max."""
    top = last + BORN
    if top <= pid_max:
        return f"(pid > {last} && pid <= {top})"
    return f"pid > {last} || pid < {RESERVED + top - pid_max}"


def record_wakeups_argv(
    tids: list[int],
    output: Path,
    duration: float,
    comm: str | None = None,
    given: tuple[int, int] | None = None,
) -> list[str] | None:
    """Wake-ups of these threads from anywhere (system-wide, filtered in the kernel on the wakee),
    for run-queue latency; None when there are too many threads for one filter. With `comm`
    (the process's name), also the wake-ups of threads of that name: threads born later
    inherit it, and a command hone starts is held before it starts any. With `given` (the last
    id handed out and the largest, `last_given()`), also the wake-ups of threads born after it
    whatever their name (`prctl`, Java's named threads): the next BORN ids the kernel hands out.
    Wake-ups of other processes' threads are dropped when they are matched to the process's
    switch-ins."""
    if not tids or len(tids) > 200:
        return None
    condition = " || ".join(f"pid == {tid}" for tid in tids)
    if comm and _FILTER_SAFE.fullmatch(comm):
        condition += f' || comm == "{comm}"'
    if given:
        condition += f" || {_born_after(*given)}"
    return [
        *scratch_record(), "-q", "-a", "-e", "sched:sched_wakeup", "--filter", condition,
        "-o", str(output), "--", *timer(duration),
    ]  # fmt: skip


def parse_wakeups(text: str) -> dict[int, list[float]]:
    """`perf script -F time,trace` of sched_wakeup events -> wakee tid -> sorted times."""
    found: dict[int, list[float]] = {}
    for line in text.splitlines():
        match = re.match(r"\s*(\d+\.\d+):\s.*?\bpid=(\d+)\b", line)
        if match:
            found.setdefault(int(match[2]), []).append(float(match[1]))
    for times in found.values():
        times.sort()
    return found


def script_wakeups(data: Path) -> dict[int, list[float]]:
    done = subprocess.run(
        ["perf", "script", "-i", str(data), "-F", "time,trace"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise HoneError(f"perf script failed: {script_failure(done.stderr)}", file=data)
    return parse_wakeups(done.stdout)
