"""A whole diagnosis: saved as one `.hone` file and shown as a terminal summary (its HTML file is
page.py's, a comparison of two comparison.py's).

The `.hone` file is the on-CPU Profile's own file (gzip JSON, `format: hone-profile`) with one
more key, `diagnosis`, holding the runtime view (capabilities, threads, off-CPU, locks, top-down,
findings, knobs). So anything that reads profiles (`--compare`, the diff, the web UI) reads a
diagnosis too, and `Diagnosis.load` reads a bare profile as a diagnosis without runtime data."""

from __future__ import annotations

import gzip
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from hone.diagnose import catalogue
from hone.diagnose.catalogue import Suggestion
from hone.diagnose.exits import UNSAMPLED
from hone.diagnose.fold import Frame, is_kernel
from hone.diagnose.golang import GoGc
from hone.diagnose.heap import Heap
from hone.diagnose.jvmgc import Gc
from hone.diagnose.kernel import without_tracing
from hone.diagnose.locks import Locks
from hone.diagnose.machine import Machine, terminal_lines
from hone.diagnose.offcpu import OffCpu
from hone.diagnose.pgwaits import UNRECORDED
from hone.diagnose.probe import Capabilities
from hone.diagnose.profile import Profile
from hone.diagnose.softirq import Softirq
from hone.diagnose.syscalls import Syscalls
from hone.diagnose.tables import function_table, module_name, summary
from hone.diagnose.threads import ThreadStat
from hone.diagnose.topdown import Topdown
from hone.diagnose.verdict import Finding
from hone.errors import HoneError
from hone.outfile import write_atomic

DIAGNOSIS_VERSION = 1


#: Code of a runtime, not of a program its user builds: a JVM's, Python's or node's own binary,
#: JIT-compiled code (a perf map) and JavaScript or Python sources.
_RUNTIME = re.compile(
    r"^(node|nodejs|java|python[\d.]*|pypy[\d.]*|lib(jvm|python[\d.]*|node)\.so.*|perf-\d+\.map)$"
    r"|\.(m?js|cjs|py)$"
)


@dataclass
class Diagnosis:
    profile: Profile
    target: str = ""
    pid: int = 0
    language: str = "native"
    window_s: float = 0.0
    cpus: int = 1
    created: float = field(default_factory=time.time)
    capabilities: Capabilities = field(default_factory=Capabilities)
    threads: list[ThreadStat] = field(default_factory=list)
    offcpu: OffCpu | None = None
    locks: Locks | None = None
    topdown: Topdown = field(default_factory=lambda: Topdown(False, evidence="not measured"))
    findings: list[Finding] = field(default_factory=list)
    suggestions: list[Suggestion] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    command: list[str] = field(default_factory=list)  # the diagnosed command, if hone started it
    language_profile: Profile | None = None  # language-level stacks (Python: py-spy)
    heap: Heap | None = None  # the process's memory and page faults (module heap)
    softirq: Softirq | None = None  # the machine's receive path per CPU (module softirq)
    gc: Gc | None = None  # a JVM's garbage collection (module jvmgc)
    go_gc: GoGc | None = None  # a Go program's collector and allocator (module golang)
    system: Machine | None = None  # `--system`: CPU split and process table (module machine)
    syscalls: Syscalls | None = None  # the process's system calls per second (module syscalls)
    #: the processes recorded, `pid` first (nginx's workers, a service's group); empty in a
    #: diagnosis saved before the window recorded more than one
    processes: list[int] = field(default_factory=list)

    @property
    def kinds(self) -> list[str]:
        return [f.kind for f in self.findings]

    def own_findings(self) -> list[Finding]:
        """The findings the process itself causes (not other work taking its CPUs)."""
        return [f for f in self.findings if f.own]

    def builds_faster(self) -> bool:
        """Whether the process's own top finding is hot code that compiler flags can make
        cheaper (`--suggest-project` then writes a compiler-flags project). Not for Python,
        Java or Node.js: their hot code runs in the interpreter or the JIT, which no build flag
        of the program's reaches; nor for Go, which gcc's flags do not build; nor for a native
        process (a shell script) whose children run such code."""
        own = self.own_findings()
        if (
            not own
            or catalogue.project_kind(own[0].kind) != "compiler-flags"
            or self.language != "native"
            or (self.language_profile is not None and self.language_profile.total)
        ):
            return False
        rows = [row for row in function_table(self.profile, "self") if not is_kernel(row.module)]
        if rows and rows[0].module == UNSAMPLED:  # short-lived programs: no code of theirs seen
            return False
        return not rows or not _RUNTIME.search(module_name(rows[0].module))

    def tunes_go_runtime(self) -> bool:
        """Whether `--suggest-project` writes a Go runtime project (module goproject): a Go
        command that hone ran, whose CPU time (its code, its collector, its demand for CPUs)
        is its own top finding; GOGC and GOMAXPROCS act on that, at the program's start."""
        own = self.own_findings()
        return (
            self.language == "go"
            and bool(self.command)
            and bool(own)
            and own[0].kind in ("cpu", "go-gc", "runqueue")
        )

    def knob_kinds(self) -> list[str]:
        """The kinds whose knobs to suggest: the process's own findings that knobs act on."""
        return [f.kind for f in self.own_findings() if f.knobs]

    def evidence(self) -> dict[str, str]:
        """Each kind of bottleneck found, with the measurement that found it (its headline)."""
        return {f.kind: f.headline for f in reversed(self.own_findings())}

    def context(self) -> dict[str, str]:
        """What the measurements found that a knob definition needs (catalogue.knobs_for)."""
        if self.softirq and self.softirq.concentrated:
            return {"network": self.softirq.device, "busy_cpu": str(self.softirq.busy_cpu)}
        return {}

    def suggest_knobs(self) -> None:
        """Look up `suggestions`: the knobs for the process's own findings, as this machine
        has them (what exists is a property of the machine the lookup runs on)."""
        self.suggestions = catalogue.knobs_for(self.knob_kinds(), self.evidence(), self.context())

    @property
    def tracing_share(self) -> float:
        """The share of the on-CPU samples in the kernel's tracing (module kernel): the cost of
        hone's own recorders, left out of the findings. Not for --system: the tracing there
        is other programs', part of what the machine is busy with."""
        if self.system or not self.profile.total:
            return 0.0
        return without_tracing(self.profile)[1] / self.profile.total

    def runtime(self) -> dict:
        return {
            "version": DIAGNOSIS_VERSION,
            "target": self.target,
            "pid": self.pid,
            "language": self.language,
            "window_s": self.window_s,
            "cpus": self.cpus,
            "created": self.created,
            "capabilities": self.capabilities.to_dict(),
            "threads": [t.to_dict() for t in self.threads],
            "offcpu": self.offcpu.to_dict() if self.offcpu else None,
            "locks": self.locks.to_dict() if self.locks else None,
            "topdown": self.topdown.to_dict(),
            "findings": [f.to_dict() for f in self.findings],
            "suggestions": [s.to_dict() for s in self.suggestions],
            "notes": self.notes,
            "command": self.command,
            "language_profile": _profile_rows(self.language_profile),
            "heap": self.heap.to_dict() if self.heap else None,
            "softirq": self.softirq.to_dict() if self.softirq else None,
            "gc": self.gc.to_dict() if self.gc else None,
            "go_gc": self.go_gc.to_dict() if self.go_gc else None,
            "system": self.system.to_dict() if self.system else None,
            "syscalls": self.syscalls.to_dict() if self.syscalls else None,
            "processes": self.processes,
            "tracing_overhead": round(self.tracing_share, 4),
        }

    def save(self, path: str | Path) -> Path:
        """The profile's `.hone` file plus the `diagnosis` key, written whole or not at all (a
        measurement cannot be taken again: `--force` over an earlier one must not lose both)."""
        path = Path(path)
        document = {**self.profile.document(), "diagnosis": self.runtime()}
        write_atomic(path, gzip.compress(json.dumps(document, separators=(",", ":")).encode(), 6))
        return path

    @classmethod
    def load(cls, path: str | Path) -> Diagnosis:
        profile = Profile.load(path)
        try:
            with gzip.open(path, "rt", encoding="utf-8") as stream:
                data = json.load(stream).get("diagnosis")
        except (OSError, ValueError):
            data = None  # folded text: a profile only
        if not data:
            return cls(profile=profile, target=profile.target)
        try:
            return cls(
                profile=profile,
                target=data["target"],
                pid=int(data["pid"]),
                language=data["language"],
                window_s=float(data["window_s"]),
                cpus=int(data["cpus"]),
                created=float(data["created"]),
                capabilities=Capabilities.from_dict(data["capabilities"]),
                threads=[ThreadStat(**t) for t in data["threads"]],
                offcpu=OffCpu.from_dict(data["offcpu"]) if data["offcpu"] else None,
                locks=Locks.from_dict(data["locks"]) if data["locks"] else None,
                topdown=Topdown.from_dict(data["topdown"]),
                findings=[Finding(**f) for f in data["findings"]],
                suggestions=[Suggestion(**s) for s in data["suggestions"]],
                notes=list(data["notes"]),
                command=list(data.get("command", [])),
                language_profile=_profile_of_rows(data.get("language_profile")),
                heap=Heap.from_dict(data["heap"]) if data.get("heap") else None,
                softirq=Softirq.from_dict(data["softirq"]) if data.get("softirq") else None,
                gc=Gc.from_dict(data["gc"]) if data.get("gc") else None,
                go_gc=GoGc.from_dict(data["go_gc"]) if data.get("go_gc") else None,
                system=Machine.from_dict(data["system"]) if data.get("system") else None,
                syscalls=Syscalls.from_dict(data["syscalls"]) if data.get("syscalls") else None,
                processes=[int(p) for p in data.get("processes", [])],
            )
        except (KeyError, TypeError, ValueError) as error:
            raise HoneError(f"damaged diagnosis section: {error}", file=path) from None


def _profile_rows(profile: Profile | None) -> dict | None:
    """A small profile inside the diagnosis section: [thread, [[function, module]...], n]."""
    if profile is None:
        return None
    rows = [[t, [list(f) for f in frames], n] for (t, frames), n in profile.stacks.items()]
    return {"event": profile.event, "target": profile.target, "samples": rows}


def _profile_of_rows(data: dict | None) -> Profile | None:
    if not data:
        return None
    stacks = {
        (str(t), tuple(Frame(str(f), str(m)) for f, m in frames)): int(n)
        for t, frames, n in data["samples"]
    }
    return Profile(stacks=stacks, event=data["event"], target=data["target"])


#: What the tracing overhead is, after its share.
TRACING_SAID = ("{share:.0%} of samples (the kernel's syscall slow path and tracepoint probes "
                "that hone's recorders enable; left out of the findings)")  # fmt: skip


def _advised(kind: str) -> bool:
    """Whether the terminal spells out a top finding's advice: time in the kernel or in a JVM's
    or Go's collector, which neither compiler flags nor the program's hot function explain."""
    return kind.startswith("kernel-") or kind in ("gc", "go-gc")


#: A CPU-bound Go program's line: Go's own profile-guided optimisation, not gcc's, from the
#: diagnosis's pprof, whose Go frames carry the source lines Go's PGO matches call sites by
#: (module golines: read from binaries of Go 1.20 and later).
GO_CPU = ("Go code: gcc's flags do not build it; Go's profile-guided optimisation (Go 1.21+) "
          "takes this diagnosis's CPU profile: cp oncpu.pb.gz default.pgo (from the report's "
          "folder to the main package's) and go build (-pgo=auto)")  # fmt: skip
#: What `--suggest-project` writes for a Go command (module goproject).
GO_PROJECT = ("--suggest-project DIR writes a project that runs the command with GOGC and "
              "GOMAXPROCS as knobs")  # fmt: skip


#: The note of a command that failed on its own inside the window (module window): the
#: diagnosis is of a failed run (a benchmark that crashed, or that the OOM killer ended),
#: which no verdict says, so the terminal prints it under the first line.
FAILED_PREFIX = "the command failed in the window: "
#: The note of a daemon the command left running (module window): hone does not stop it, so
#: the terminal says so too, not only the report (a server left serving after the diagnosis).
DAEMON_PREFIX = "the command left a daemon running, "


def span(seconds: float) -> str:
    """A window's length: tenths of a second, hundredths under one (`-d 0.05` read `for 0.1 s`,
    twice what was recorded)."""
    return f"{seconds:.1f}" if seconds >= 1 else f"{seconds:.2f}"


def terminal(d: Diagnosis, report: Path | None = None, saved: Path | None = None) -> str:
    """The summary printed at the end of `hone diagnose`."""
    lines = [f"hone diagnose: {d.target} for {span(d.window_s)} s ({d.language}, {d.cpus} CPUs)"]
    said = (f"pid {d.pid} ended ", f"pid {d.pid} was stopped ", UNRECORDED, FAILED_PREFIX,
            DAEMON_PREFIX)  # fmt: skip
    lines += [f"note: {n}" for n in d.notes if n.startswith(said)]
    if d.findings:
        lines.append(f"verdict: {d.findings[0].headline}")
        lines += [f"  also: {f.headline}" for f in d.findings[1:4]]
    if d.syscalls:
        lines.append(f"system calls: {d.syscalls.verdict}")
    if d.system:
        lines += terminal_lines(d.system)
    if d.threads:
        lines.append("hot threads (% of one CPU: on CPU / run queue / I/O / sleep):")
        shown = d.threads[:5]
        width = max(len(t.label) for t in shown)  # whole labels, in a column
        several = len({t.pid for t in d.threads}) > 1  # each names its process
        for t in shown:
            lines.append(
                f"  {t.tid:>7} {t.label:<{width}} {t.cpu_pct:5.1f} {t.runq_pct:5.1f} "
                f"{t.io_pct:5.1f} {t.sleep_pct:5.1f}" + (f"  {t.process}" if several else "")
            )
    if d.profile.total:  # the tracing's own samples are not what the process does
        lines.append(f"on-CPU: {summary(without_tracing(d.profile)[0])}")
    if d.system and d.profile.total:
        hot = function_table(d.profile, "self")[:5]
        lines.append("hottest functions (self % of the machine's samples): " + ", ".join(
            f"{r.name} ({module_name(r.module)}) {r.self_share:.0%}" for r in hot))  # fmt: skip
    if d.language_profile is not None and d.language_profile.total:  # py-spy's, whatever the main
        lines.append(f"python stacks ({d.language_profile.event}): "
                     f"{summary(d.language_profile)}")  # fmt: skip
    if d.topdown.available:
        parts = ", ".join(f"{k} {v:.1f}%" for k, v in d.topdown.level1.items())
        lines.append(f"top-down ({d.topdown.method}): {parts}")
    elif not d.system:
        lines.append(f"top-down: unavailable ({d.topdown.evidence})")
        if d.topdown.software:
            parts = ", ".join(f"{k} {v:.1f}%" for k, v in d.topdown.software.items())
            lines.append(f"  software split of the working threads' time instead: {parts}")
    shown = {f.headline for f in d.findings[:4]}  # a finding's headline is printed already
    if d.heap and d.heap.verdict not in shown:
        lines.append(f"heap: {d.heap.verdict}")
    if d.softirq and d.softirq.verdict not in shown:
        lines.append(f"receive path: {d.softirq.verdict}")
    if d.gc and d.gc.verdict not in shown:
        lines.append(f"gc: {d.gc.verdict}")
    if d.go_gc and d.go_gc.verdict not in shown:
        lines.append(f"gc: {d.go_gc.verdict}")
    by_evidence: dict[str, list[str]] = {}
    for s in d.suggestions:
        if s.present:
            by_evidence.setdefault(s.evidence, []).append(s.name)
    for evidence, names in by_evidence.items():
        because = f" (measured: {evidence})" if evidence else ""
        lines.append(f"knobs to tune: {', '.join(names)}{because}")
    if d.builds_faster():
        lines.append(
            "no kernel knob makes this code cheaper: --suggest-project DIR writes a "
            "compiler-flags project (-O, -march, LTO, PGO) for a program you build"
        )
    elif d.own_findings() and _advised(d.own_findings()[0].kind):
        lines += [f"advice: {tip}" for tip in catalogue.advice(d.own_findings()[0].kind)]
    elif d.own_findings() and d.own_findings()[0].kind == "pg-lock":
        lines += [line for line in d.own_findings()[0].details if line.startswith("advice: ")]
    if d.language == "go" and d.own_findings() and d.own_findings()[0].kind == "cpu":
        lines.append(GO_CPU)
    if d.tunes_go_runtime():
        lines.append(GO_PROJECT)
    used = [i.name for i in d.capabilities.items if i.used]
    if used:
        lines.append(f"used: {', '.join(used)}")
    if d.tracing_share:
        lines.append(f"tracing overhead: {TRACING_SAID.format(share=d.tracing_share)}")
    missing = [i.name for i in d.capabilities.items if not i.available]
    if missing:
        lines.append(f"not available here: {', '.join(missing)}")
    if report:
        lines.append(f"report: {report}")
    if saved:
        lines.append(f"saved: {saved}")
    return "\n".join(lines)
