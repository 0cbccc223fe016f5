"""Record an on-CPU profile with the real `perf`: a running process or a command.

    rec = record(pid=1234, duration_s=30)            # or record(command=["./bench", "-n", "5"])
    rec.perf_data                                    # the raw perf.data, kept for perf report
    profile = rec.profile()                          # hone.diagnose.profile.Profile

Sampling is `perf record -F 99 -g`: 99 Hz stays off any timer tick multiple (no lockstep with
periodic work) and costs well under 1 % of a CPU. The event is `cycles` when the machine has
hardware counters and `cpu-clock` (a software timer) when it has none, as in most VMs.

Call stacks come from frame pointers by default: the kernel walks them at sample time for a few
hundred nanoseconds, kernel stacks included, and `perf script` stays fast. Programs built without
frame pointers lose their callers that way (only the leaf and whatever happens to chain), so
`call_graph="dwarf"` is offered: perf copies 8 KB of user stack per sample and unwinds it later
with the debug info, which is exact for such programs but costs far more (a larger perf.data,
a slower `perf script`, more overhead at high frequencies).

Every command is an argv list; nothing reaches a shell.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hone.collect.perf import hardware_counters_available
from hone.diagnose import scratch
from hone.diagnose.perf_record import command_of, perf_record, start_tied, timer
from hone.diagnose.probe import Capabilities
from hone.diagnose.profile import Profile
from hone.errors import HoneError

CallGraph = Literal["fp", "dwarf"]
#: A sample's line in perf script's output with pids: the process name, then `pid/tid`.
_SAMPLED = re.compile(rb"^ *\S[^\n]*? (\d+)/\d+ +(?:\[\d+\] +)?\d+\.\d+:", re.MULTILINE)


@dataclass
class Recording:
    """A finished `perf record` run and its `perf script` text."""

    perf_data: Path
    script: bytes
    event: str
    frequency_hz: float
    duration_s: float
    target: str
    call_graph: CallGraph
    processes: bool = False  # of several processes: the stacks' roots name each one's pid

    def samples_by_pid(self) -> Counter[int]:
        """How many samples each process sampled has, from perf script's `comm pid/tid` lines (a
        recording of several processes or of the whole system names them; others give none)."""
        return Counter(int(pid) for pid in _SAMPLED.findall(self.script))

    def profile(self, addresses: bool = False) -> Profile:
        """The recording's profile; with `addresses`, its frames' addresses kept besides (a Go
        program's, whose pprof then names source lines)."""
        return Profile.from_perf_script(
            self.script,
            per_process=self.processes,
            addresses=addresses,
            event=self.event,
            frequency_hz=self.frequency_hz,
            duration_s=self.duration_s,
            target=self.target,
            perf_data=str(self.perf_data),
        )


def default_event() -> str:
    """`cycles` with hardware counters, else the `cpu-clock` software timer."""
    return "cycles" if hardware_counters_available() else "cpu-clock"


def event_of(caps: Capabilities) -> str:
    """The event for what `probe` found: asking perf again (`default_event`) would cost a
    `perf stat` run, half a second on a busy machine, before the recorder starts."""
    return "cycles" if caps.has("hardware counters") else "cpu-clock"


def record(
    *,
    pid: int | None = None,
    pids: Sequence[int] | None = None,
    command: Sequence[str] | None = None,
    duration_s: float | None = None,
    frequency_hz: int = 99,
    call_graph: CallGraph = "fp",
    event: str | None = None,
    output_dir: str | Path | None = None,
    quiet_command: bool = False,
    system: bool = False,
    mark: Callable[[], None] | None = None,
    before_script: Callable[[], None] | None = None,
    start: Callable[..., subprocess.Popen] = start_tied,
) -> Recording:
    """Profile `pid` (or the processes `pids`, and what they fork) for `duration_s` seconds
    (default 30), or run `command` under perf until it exits (or until `duration_s`, when
    given, then stop it), or with `system` every CPU for `duration_s` seconds (`perf record
    -a`). With `pids` or `system`, `perf script` names each sample's pid/tid.
    `mark` (with `system`) is called when the `sleep` that bounds the window starts and when it
    ends: perf takes seconds to start on a busy machine (it lists every thread's mappings first)
    and to finish, and what is measured beside it is measured over the sampled window.
    `before_script` is called once perf record has ended, before perf script reads its data (a
    JVM then writes the map of its JIT-compiled code that perf script names frames from).
    `start` starts perf (as Popen does): a window recording in a background thread passes its
    `Processes.start`, so that its end, a Ctrl-C or SIGTERM included, stops this perf too (a
    `perf record -p PID -- sleep N` left behind records on for N seconds after hone ends)."""
    if pid is not None:
        pids = [pid]
    if sum((bool(pids), bool(command), system)) != 1:
        raise HoneError("profile either a running process (--pid), a command or the whole system")
    perf = shutil.which("perf")
    if perf is None:
        raise HoneError("perf is not installed (apt-get install linux-perf)")
    if pid is not None and not Path(f"/proc/{pid}").exists():
        raise HoneError(f"no process with pid {pid}")
    several = pid is None and bool(pids)
    if frequency_hz <= 0:
        raise HoneError(f"sampling frequency must be positive, got {frequency_hz}")
    event = event or default_event()
    folder = Path(output_dir or scratch.make())
    folder.mkdir(parents=True, exist_ok=True)
    perf_data = folder / "perf.data"
    argv = [*perf_record(perf=perf), "-F", str(frequency_hz), "-e", event, "-o", str(perf_data)]
    argv += ["--call-graph", "dwarf"] if call_graph == "dwarf" else ["-g"]
    if pids or system:
        seconds = 30.0 if duration_s is None else duration_s
        listed = ",".join(map(str, pids or []))
        # -s: the exact CPU time of each followed process as it ends (module exits)
        argv += ["-a"] if system else ["-s", "-p", listed]
        argv += ["--", *timer(seconds)]
        target = "whole system" if system else f"pid {listed}"
    else:
        argv += ["--", *command]  # type: ignore[misc]
        target = shlex.join(command)  # type: ignore[arg-type]
    started = time.monotonic()
    limit = duration_s if command else None
    said = _run_perf_record(
        argv, limit, quiet_command, frequency_hz, mark if system else None, start
    )
    # perf lowers -F to the kernel's limit at start, saying so: the period is the rate it used
    throttled = re.search(r"throttling from [\d,.']+ Hz to ([\d,.']+) Hz", said)
    if throttled:
        frequency_hz = int(re.sub(r"\D", "", throttled[1]))
    elapsed = time.monotonic() - started
    if not perf_data.exists() or perf_data.stat().st_size == 0:
        raise HoneError(f"perf record wrote no data for {target}")
    if before_script:
        before_script()
    fields = ["-F", "comm,pid,tid,cpu,time,period,event,ip,sym,symoff,dso"] if system else []
    if several:  # no cpu: perf -p leaves it out of the samples
        fields = ["-F", "comm,pid,tid,time,period,event,ip,sym,symoff,dso"]
    script = subprocess.run(
        [perf, "script", "-i", str(perf_data), *fields], capture_output=True, check=False
    )
    if script.returncode != 0:
        reason = script.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["?"]
        raise HoneError(f"perf script failed: {reason[0]}")
    return Recording(
        perf_data, script.stdout, event, frequency_hz, elapsed, target, call_graph, several
    )


def _run_perf_record(
    argv: list[str],
    limit_s: float | None,
    quiet: bool,
    frequency: int,
    mark: Callable[[], None] | None = None,
    start: Callable[..., subprocess.Popen] = start_tied,
) -> str:
    """Run perf record (`start` starts it); with a limit, SIGINT it (perf then stops the command
    and writes). `mark` is called when perf's command (sleep) starts and ends. Returns perf's
    stderr."""
    output = subprocess.DEVNULL if quiet else None
    try:
        process = start(argv, stdout=output, stderr=subprocess.PIPE, start_new_session=True)
    except OSError as error:
        raise HoneError(f"cannot run perf: {error.strerror}") from None
    try:
        if mark:
            _mark_command(process, mark)
        _, stderr = process.communicate(timeout=limit_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGINT)
        _, stderr = process.communicate()
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGINT)
        process.communicate()
        raise
    text = stderr.decode(errors="replace")
    if process.returncode not in (0, -signal.SIGINT) and "Captured and wrote" not in text:
        raise HoneError(failure(text, process.returncode, frequency))
    return text


def _mark_command(perf: subprocess.Popen, mark: Callable[[], None]) -> None:
    """Call `mark` when perf's child has become the command (perf enables its events just
    before) and again when the command has ended. perf has one child: the forked command."""
    child = None
    while perf.poll() is None and child is None:
        child = command_of(perf.pid)
        time.sleep(0.02)
    mark()
    while child and perf.poll() is None and _state(child) not in ("", "Z", "X"):
        time.sleep(0.02)
    mark()


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text(errors="replace").rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


MAX_RATE = Path("/proc/sys/kernel/perf_event_max_sample_rate")
REASON = re.compile(
    r"returned with|No such|[Pp]ermission|not permitted|Invalid|failed|Couldn't|[Cc]annot"
)


def failure(stderr: str, code: int, frequency: int) -> str:
    """perf record's failure in one line, with the reason when it is the sampling rate.

    perf caps -F at kernel.perf_event_max_sample_rate when it starts, but the kernel lowers that
    limit whenever perf's sampling interrupts take too long, also while perf is still opening
    the events of a process's threads; an event opened above the new limit is refused with
    EINVAL, which perf reports as `Invalid event (cpu-clock) in per-thread mode, enable system
    wide with '-a'` (or nothing at all) and exit code 255."""
    lines = [
        line.strip()
        for line in stderr.splitlines()
        if line.strip() not in ("", "Error:") and "may provide additional information" not in line
    ]
    # perf may add warnings about its config after the reason: the reason is the error line
    reasons = [line for line in lines if REASON.search(line)] or lines
    said = reasons[-1].rstrip(".") if reasons else f"exit code {code}, nothing on stderr"
    try:
        limit = int(MAX_RATE.read_text())
    except (OSError, ValueError):
        limit = 0
    refused = not lines or "Invalid" in said or "Invalid argument" in stderr
    if frequency < 1000 or not (refused or (limit and frequency > limit)):
        return f"perf record failed: {said}"
    now = f"it is {limit} Hz now" if limit else "it cannot be read"
    return (
        f"perf record failed at -F {frequency}: the kernel refused that sampling rate (perf says: "
        f"{said}); the limit is kernel.perf_event_max_sample_rate ({now}), which the kernel "
        "lowers while perf's sampling interrupts take too long: use a lower -F (the default 99 "
        "is enough for a profile), or raise the limit with sysctl"
    )
