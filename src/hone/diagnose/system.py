"""`hone diagnose --system`: what the whole machine is busy with, before anyone knows a pid.

One recorder, `perf record -a -g` on every CPU for the window, between two readings of
/proc/stat, PSI and every process's CPU time (modules machine, cputime). The samples become the
same on-CPU Profile a process diagnosis has (flame graph, tables, kernel split, `.hone` file,
`--compare`), with each stack's root `comm-PID` so that processes of one name stay apart; the
process table is sized by the kernel's count of each process's CPU time, with the samples'
hottest function and user/kernel split. The verdict names the busiest process and the command
that diagnoses it; the kernel's share of the machine's CPU time becomes findings of its own, as
for one process. hone's own process tree (its process, its perf) is left out of the table, the
profile and the CPU split, and reported as hone's cost (`Machine.hone`). Off-CPU and lock
recorders are per process and are not run: a system-wide sched_switch recording is a hundred
times the data, and the process named is the place to look at them."""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path

from hone.diagnose import scratch
from hone.diagnose.cputime import Snapshot
from hone.diagnose.fold import Stack, parse_perf_script
from hone.diagnose.kernel import split
from hone.diagnose.machine import Counters, Machine, pressure, processes, root_of, without
from hone.diagnose.machine import split as cpu_split
from hone.diagnose.probe import Capabilities, probe, stack_depth_check
from hone.diagnose.profile import Profile
from hone.diagnose.record import event_of, record
from hone.diagnose.report import Diagnosis
from hone.diagnose.topdown import Topdown
from hone.diagnose.verdict import MIN_SCORE, Finding, kernel_findings
from hone.errors import HoneError

TARGET = "whole system"
#: Below this many CPUs' worth of busy time the machine is called mostly idle.
IDLE_CPUS = 0.1
#: A part of the kernel becomes a finding at this share of the machine's samples: across a
#: whole machine a few percent in system calls is the normal background, not a bottleneck.
KERNEL_SHARE = 0.10


def collect(
    duration: float,
    *,
    frequency: int = 99,
    keep: Path | None = None,
    caps: Capabilities | None = None,
) -> Diagnosis:
    """Sample every CPU for `duration` seconds and say what the machine is busy with."""
    caps = caps or probe()
    if not caps.has("perf"):
        raise HoneError(caps.get("perf").detail if caps.get("perf") else "perf is missing")
    folder = keep or scratch.make()
    marks: list[tuple[Counters, Snapshot]] = []
    recording = record(
        system=True,
        duration_s=duration,
        frequency_hz=frequency,
        event=event_of(caps),
        output_dir=folder,
        mark=lambda: marks.append((Counters.read(), Snapshot.read())),
    )
    (before, tasks_before), (after, tasks_after) = marks[0], marks[-1]
    notes = []
    if recording.frequency_hz < frequency:
        notes.append(
            f"on-CPU sampled at {recording.frequency_hz:g} Hz, not -F {frequency}: perf lowered "
            "it to the kernel's limit, kernel.perf_event_max_sample_rate"
        )
    by_thread = parse_perf_script(
        recording.script, count="samples", event=recording.event, include_tid=True
    )
    cpus = os.cpu_count() or 1
    own = tasks_before.family(os.getpid()) | tasks_after.family(os.getpid())
    table = processes(by_thread, recording.frequency_hz, duration, tasks_before, tasks_after)
    hone = [p for p in table if p.pid in own]
    machine = Machine(
        cpus=cpus,
        split=without(cpu_split(before, after), hone, cpus),
        pressure=pressure(before, after),
        processes=[p for p in table if p.pid not in own],
        hone=hone,
    )
    profile = Profile(
        stacks=_per_process(by_thread, own),
        event=recording.event,
        frequency_hz=recording.frequency_hz,
        duration_s=duration,
        target=TARGET,
        perf_data=str(recording.perf_data) if keep else None,
    )
    if profile.total:
        caps.add(stack_depth_check(profile.folded()))
    caps.mark_used("perf", "software events", "frame-pointer stacks")
    result = Diagnosis(
        profile=profile,
        target=TARGET,
        language="system",
        window_s=round(after.at - before.at, 3),
        cpus=cpus,
        capabilities=caps,
        topdown=Topdown(False, evidence="not measured for the whole system"),
        findings=decide(profile, machine),
        notes=notes,
        system=machine,
    )
    result.suggest_knobs()
    return result


def _per_process(
    stacks: dict[tuple[str, Stack], int], own: Collection[int] = ()
) -> dict[tuple[str, Stack], int]:
    """`comm-PID/TID` roots -> `comm-PID`: a flame graph per process, its threads merged by
    stack (thread names stay apart when they differ, as a JVM's do). The idle task (pid 0) is
    left out, as from the process table: a machine half idle had `pv_native_safe_halt` as its
    hottest function and 'CPU time in other kernel work: 49%' as a finding. hone's own
    processes (`own`) are left out too: on a quiet machine perf's own work was the hottest."""
    merged: dict[tuple[str, Stack], int] = {}
    for (root, frames), count in stacks.items():
        pid = root_of(root)[1]
        if pid == 0 or pid in own:
            continue
        key = (root.rpartition("/")[0] or root, frames)
        merged[key] = merged.get(key, 0) + count
    return merged


def _busiest(m: Machine) -> Finding:
    top = m.processes[0]
    busy = sum(p.cpu_pct for p in m.processes) or 1.0
    hottest = f", hottest in {top.hottest}" if top.hottest else ""
    kernel = f", {top.kernel_pct / top.cpu_pct:.0%} of it in the kernel" if top.cpu_pct else ""
    headline = (
        f"Busiest process: {top.command} (pid {top.pid}) at {top.cpu_pct:.0f}% of a CPU, "
        f"{top.cpu_pct / busy:.0%} of all processes' CPU time{kernel}{hottest}; "
        f"drill in: {top.drill_in}"
    )
    details = [
        f"{p.command} (pid {p.pid}): {p.cpu_pct:.1f}% of a CPU; {p.drill_in}"
        for p in m.processes[1:5]
    ]
    return Finding("process", top.cpu_pct / 100, headline, details)


def _pressure(m: Machine) -> Finding:
    headline = (
        f"CPU pressure: runnable work waited for a CPU {m.pressure:.0%} of the window, "
        f"{m.busy_cpus:.1f} of {m.cpus} CPUs busy"
    )
    return Finding("runqueue", m.pressure or 0.0, headline)


def decide(profile: Profile, m: Machine) -> list[Finding]:
    """The busiest process first (the question `--system` answers), then the kernel's parts,
    CPU pressure, ranked; 'mostly idle' when under 0.1 CPUs were busy."""
    busy = m.busy_cpus
    if not m.processes or busy < IDLE_CPUS:
        parts = ", ".join(f"{k} {v:.0f}%" for k, v in m.split.items() if v >= 1)
        return [Finding("idle", 0.0, f"Mostly idle: {busy:.2f} of {m.cpus} CPUs busy ({parts})")]
    in_kernel = split(profile)
    rest = [
        f
        for f in kernel_findings(in_kernel, [], busy)
        if in_kernel.group_share(f.kind.removeprefix("kernel-")) >= KERNEL_SHARE
    ]
    if m.pressure is not None:
        rest.append(_pressure(m))
    rest = sorted((f for f in rest if f.score >= MIN_SCORE), key=lambda f: -f.score)
    return [_busiest(m), *rest]
