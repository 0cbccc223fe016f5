"""What this machine offers for diagnosis, found by trying, with the evidence for each answer.

perf's exit code is not trusted: `perf stat -M TopdownL1` exits 0 on a machine without counters
(it silently falls back to software events), so every probe reads what perf actually printed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

TRACEFS = (Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing"))

#: Tracepoints hone diagnose uses, and what for.
TRACEPOINTS = {
    "sched:sched_switch": "off-CPU time and run-queue latency",
    "sched:sched_wakeup": "run-queue latency from wake-up",
    "lock:contention_begin": "kernel lock contention (perf lock)",
    "syscalls:sys_enter_futex": "user-space lock waits (futex)",
    "syscalls:sys_exit_futex": "user-space lock waits (futex)",
    "raw_syscalls:sys_enter": "the system-call rate (counted, not recorded)",
    "sched:sched_process_fork": "process churn: processes started (counted)",
    "sched:sched_process_exec": "process churn: programs executed (counted)",
    "sched:sched_process_exit": "process churn: processes ended (counted)",
}


@dataclass
class Capability:
    """One thing hone may use: whether it is there and the evidence either way."""

    name: str
    available: bool
    detail: str
    used_for: str = ""
    used: bool = False  # whether this run used it


@dataclass
class Capabilities:
    cpu_vendor: str = ""
    cpu_family: int = 0
    cpu_model: int = 0
    cpu_name: str = ""
    items: list[Capability] = field(default_factory=list)

    def has(self, name: str) -> bool:
        return any(item.name == name and item.available for item in self.items)

    def get(self, name: str) -> Capability | None:
        return next((item for item in self.items if item.name == name), None)

    def mark_used(self, *names: str) -> None:
        for item in self.items:
            if item.name in names and item.available:
                item.used = True

    def add(self, item: Capability) -> None:
        self.items = [i for i in self.items if i.name != item.name] + [item]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Capabilities:
        items = [Capability(**item) for item in data.get("items", [])]
        return cls(**{**data, "items": items})


def _run(argv: list[str], timeout: float = 20) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


def cpu_identity(cpuinfo: str) -> tuple[str, int, int, str]:
    """Vendor, family, model and model name from /proc/cpuinfo text (first CPU)."""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        if not line.strip():
            break
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    vendor = {"GenuineIntel": "intel", "AuthenticAMD": "amd"}.get(
        fields.get("vendor_id", ""), fields.get("vendor_id", "").lower() or "unknown"
    )
    return (
        vendor,
        int(fields.get("cpu family", "0") or 0),
        int(fields.get("model", "0") or 0),
        fields.get("model name", ""),
    )


def _stat_lines(text: str) -> Iterator[tuple[str, str]]:
    """(value, event) of each count line of `perf stat -x,` output. Event modifiers (`:u`,
    which perf adds for users other than root) are dropped."""
    for line in text.splitlines():
        parts = line.split(",")
        if len(parts) < 3 or line.startswith("#"):
            continue
        value, event = parts[0].strip(), parts[2].strip()
        if event.startswith("cpu/") and not event.endswith("/"):  # cpu/event,cmask=0x6/
            end = next((i for i in range(3, len(parts)) if parts[i].endswith("/")), 2)
            event = ",".join(parts[2 : end + 1]).strip()
        event = re.sub(r":[ukhpPGH]+$", "", event)  # task-clock:u (not root) is task-clock
        if event:
            yield value, event


def perf_stat_counts(text: str) -> dict[str, float | None]:
    """Counts from `perf stat -x,` output: event -> value, None when perf could not count it."""
    counts: dict[str, float | None] = {}
    for value, event in _stat_lines(text):
        try:
            counts[event] = float(value)
        except ValueError:
            counts[event] = None
    return counts


def stat_failure(text: str) -> str:
    """Why `perf stat -x,` counted nothing, in words for a person: `cycles, instructions not
    supported` rather than its CSV lines (`<not supported>,,cycles,0,100.00,,`), else perf's
    own message (`event syntax error: ...`), without its usage text."""
    uncounted: dict[str, list[str]] = {}
    for value, event in _stat_lines(text):
        if value.startswith("<"):
            uncounted.setdefault(value.strip("<>"), []).append(event)
    if uncounted:
        return "; ".join(f"{', '.join(events)} {why}" for why, events in uncounted.items())
    said = [line.strip().removeprefix("Error:").strip() for line in text.splitlines()]
    return next((line for line in said if line), "no output")


def _probe_perf(caps: Capabilities) -> bool:
    perf = shutil.which("perf")
    if not perf:
        caps.add(Capability("perf", False, "no `perf` on PATH (Debian: apt install linux-perf)"))
        return False
    version = _run([perf, "version"])
    if version.returncode != 0:
        caps.add(Capability("perf", False, f"`perf version` failed: {version.stderr.strip()}"))
        return False
    paranoid = Path("/proc/sys/kernel/perf_event_paranoid")
    level = paranoid.read_text().strip() if paranoid.exists() else "?"
    caps.add(
        Capability(
            "perf",
            True,
            f"{version.stdout.strip()}; perf_event_paranoid={level}; uid {os.geteuid()}",
            "sampling, tracepoints, counters",
        )
    )
    return True


def _probe_counters(caps: Capabilities) -> None:
    soft = perf_stat_counts(_run(["perf", "stat", "-x,", "-e", "task-clock", "--", "true"]).stderr)
    caps.add(
        Capability(
            "software events",
            soft.get("task-clock") is not None,
            f"perf stat -e task-clock counted {soft.get('task-clock')}",
            "on-CPU sampling with cpu-clock",
        )
    )
    out = _run(["perf", "stat", "-x,", "-e", "cycles,instructions", "--", "true"]).stderr
    cycles = perf_stat_counts(out).get("cycles")
    if cycles is not None:
        detail = f"perf stat counted {cycles:,.0f} cycles of `true`"
    else:
        reason = stat_failure(out)
        vm = ", as on a virtual machine without a virtual PMU" if "not supported" in reason else ""
        detail = f"no hardware counters: perf stat says {reason}{vm}"
    caps.add(
        Capability("hardware counters", cycles is not None, detail, "top-down (TMAM) analysis")
    )


def _probe_metric_groups(caps: Capabilities) -> None:
    listed = _run(["perf", "list", "metricgroup"]).stdout
    groups = [g.strip() for g in listed.splitlines()[1:] if g.strip() and ":" not in g]
    topdown = [g for g in groups if g.lower().startswith("topdown")]
    measured = _run(["perf", "stat", "-x,", "-M", "TopdownL1", "--", "true"])
    text = measured.stdout + measured.stderr
    # A real TopdownL1 run prints tma_* or topdown-* lines with numbers; a fallback does not.
    real = [
        line
        for line in text.splitlines()
        if re.search(r"tma_|topdown|retiring|frontend_bound|backend_bound", line, re.I)
        and re.match(r"\s*[0-9.]+,", line)
    ]
    if real:
        detail = f"perf stat -M TopdownL1 measured: {real[0][:120]}"
    else:
        detail = (
            f"perf lists {len(groups)} metric groups ({', '.join(topdown) or 'no Topdown*'}) "
            f"but `perf stat -M TopdownL1` printed no top-down metric (exit code "
            f"{measured.returncode}: perf fell back to default events)"
        )
    caps.add(Capability("perf metric groups", bool(real), detail, "TMAM from perf's own tables"))


def tracefs_events() -> tuple[Path | None, str]:
    """The tracefs events folder, or why it cannot be read (not root: tracefs is 0700)."""
    for root in TRACEFS:
        try:
            if (root / "events").is_dir():
                return root / "events", ""
        except PermissionError:
            return None, f"no permission to read {root}/events (run as root)"
    return None, ""


def _probe_tracepoints(caps: Capabilities) -> None:
    events, denied = tracefs_events()
    listed = "" if events or denied else _run(["perf", "list", "tracepoint"], timeout=60).stdout
    for name, purpose in TRACEPOINTS.items():
        system, event = name.split(":")
        if denied:
            ok, detail = False, denied
        elif events:
            ok = (events / system / event).is_dir()
            detail = f"{events}/{system}/{event} {'exists' if ok else 'absent'}"
        else:
            ok = f"{name} " in listed
            detail = f"perf list tracepoint: {'listed' if ok else 'not listed'}"
        caps.add(Capability(f"tracepoint {name}", ok, detail, purpose))


def _probe_kernel(caps: Capabilities) -> None:
    btf = Path("/sys/kernel/btf/vmlinux")
    caps.add(
        Capability(
            "BTF", btf.exists(), f"{btf} {'exists' if btf.exists() else 'absent'}", "eBPF tools"
        )
    )
    kprobe_pmu = Path("/sys/bus/event_source/devices/kprobe")
    events, _ = tracefs_events()
    kprobe_events = events.parent / "kprobe_events" if events else None
    ok = kprobe_pmu.exists() and bool(kprobe_events and kprobe_events.exists())
    caps.add(
        Capability(
            "kprobes",
            ok,
            f"{kprobe_pmu} {'exists' if kprobe_pmu.exists() else 'absent'}; "
            f"{kprobe_events} {'exists' if kprobe_events and kprobe_events.exists() else 'absent'}",
            "BPF off-CPU tools (offcputime); hone uses sched_switch instead",
        )
    )
    schedstat = Path("/proc/self/schedstat")
    caps.add(
        Capability(
            "schedstat",
            schedstat.exists(),
            f"{schedstat} {'exists' if schedstat.exists() else 'absent (CONFIG_SCHED_INFO off)'}",
            "per-thread run-queue wait",
        )
    )


def _probe_tools(caps: Capabilities) -> None:
    for tool, purpose in (
        ("jstack", "Java thread names (nid = thread id)"),
        ("jcmd", "Java JIT frames (Compiler.perfmap)"),
        ("py-spy", "Python thread names and stacks"),
    ):
        path = shutil.which(tool) or _venv_tool(tool)
        caps.add(Capability(tool, bool(path), path or f"no `{tool}` on PATH", purpose))


def _venv_tool(tool: str) -> str | None:
    """A tool installed next to this Python (py-spy from the dev extra lives in the venv)."""
    import sys

    candidate = Path(sys.executable).parent / tool
    return str(candidate) if candidate.exists() else None


def tool_path(tool: str) -> str | None:
    return shutil.which(tool) or _venv_tool(tool)


def _items_of(step: Callable[[Capabilities], None]) -> list[Capability]:
    """What one probing step finds, on its own (to run beside the others)."""
    found = Capabilities()
    step(found)
    return found.items


def probe() -> Capabilities:
    """Try everything hone diagnose may use; takes about a second."""
    cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
    vendor, family, model, name = cpu_identity(cpuinfo)
    caps = Capabilities(cpu_vendor=vendor, cpu_family=family, cpu_model=model, cpu_name=name)
    if _probe_perf(caps):
        # four perf runs, each mostly perf's own start-up: side by side they take half as long
        with ThreadPoolExecutor(2) as pool:
            parts = list(pool.map(_items_of, (_probe_counters, _probe_metric_groups)))
        for items in parts:
            caps.items += items
    _probe_tracepoints(caps)
    _probe_kernel(caps)
    _probe_tools(caps)
    return caps


def stack_depth_check(folded: dict[str, int]) -> Capability:
    """Frame pointers, judged from recorded stacks: most samples should have several frames."""
    total = sum(folded.values())
    deep = sum(count for stack, count in folded.items() if stack.count(";") >= 2)
    share = deep / total if total else 0.0
    ok = share >= 0.5
    detail = f"{share:.0%} of {total} on-CPU samples have 3 or more frames"
    if not ok and total:
        detail += (
            "; stacks look truncated: build with -fno-omit-frame-pointer "
            "(Java: -XX:+PreserveFramePointer)"
        )
    return Capability("frame-pointer stacks", ok, detail, "complete call stacks")
