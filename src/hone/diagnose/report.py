"""A whole diagnosis: saved as one `.hone` file, shown as a terminal summary and one HTML file.

The `.hone` file is the on-CPU Profile's own file (gzip JSON, `format: hone-profile`) with one
more key, `diagnosis`, holding the runtime view (capabilities, threads, off-CPU, locks, top-down,
findings, knobs). So anything that reads profiles (`--compare`, the diff, the web UI) reads a
diagnosis too, and `Diagnosis.load` reads a bare profile as a diagnosis without runtime data."""

from __future__ import annotations

import gzip
import html
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hone.diagnose import catalogue
from hone.diagnose.catalogue import Suggestion
from hone.diagnose.diff import diff, diff_summary, format_diff, moves
from hone.diagnose.flamegraph import diff_flamegraph_svg, modules_of, render
from hone.diagnose.fold import Frame
from hone.diagnose.heap import Heap
from hone.diagnose.locks import Locks
from hone.diagnose.machine import Machine, terminal_lines
from hone.diagnose.offcpu import OffCpu
from hone.diagnose.probe import Capabilities
from hone.diagnose.profile import Profile
from hone.diagnose.softirq import Softirq
from hone.diagnose.tables import function_table, module_name, module_table, summary
from hone.diagnose.threads import ThreadStat
from hone.diagnose.topdown import Topdown
from hone.diagnose.verdict import Finding, covered
from hone.errors import HoneError
from hone.outfile import write_atomic

DIAGNOSIS_VERSION = 1


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
    system: Machine | None = None  # `--system`: CPU split and process table (module machine)

    @property
    def kinds(self) -> list[str]:
        return [f.kind for f in self.findings]

    def own_findings(self) -> list[Finding]:
        """The findings the process itself causes (not other work taking its CPUs)."""
        return [f for f in self.findings if f.own]

    def builds_faster(self) -> bool:
        """Whether the process's own top finding is hot code that compiler flags can make
        cheaper (`--suggest-project` then writes a compiler-flags project). Not for Python or
        Java: their hot code runs in the interpreter or the JIT, which no build flag of the
        program's reaches."""
        own = self.own_findings()
        return (
            bool(own)
            and catalogue.project_kind(own[0].kind) == "compiler-flags"
            and self.language == "native"
        )

    def evidence(self) -> dict[str, str]:
        """Each kind of bottleneck found, with the measurement that found it (its headline)."""
        return {f.kind: f.headline for f in reversed(self.own_findings())}

    def context(self) -> dict[str, str]:
        """What the measurements found that a knob definition needs (catalogue.knobs_for)."""
        if self.softirq and self.softirq.concentrated:
            return {"network": self.softirq.device, "busy_cpu": str(self.softirq.busy_cpu)}
        return {}

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
            "system": self.system.to_dict() if self.system else None,
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
                system=Machine.from_dict(data["system"]) if data.get("system") else None,
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


def terminal(d: Diagnosis, report: Path | None = None, saved: Path | None = None) -> str:
    """The summary printed at the end of `hone diagnose`."""
    lines = [f"hone diagnose: {d.target} for {d.window_s:.1f} s ({d.language}, {d.cpus} CPUs)"]
    if d.findings:
        lines.append(f"verdict: {d.findings[0].headline}")
        lines += [f"  also: {f.headline}" for f in d.findings[1:4]]
    if d.system:
        lines += terminal_lines(d.system)
    if d.threads:
        lines.append("hot threads (% of one CPU: on CPU / run queue / I/O / sleep):")
        shown = d.threads[:5]
        width = max(len(t.label) for t in shown)  # whole labels, in a column
        for t in shown:
            lines.append(
                f"  {t.tid:>7} {t.label:<{width}} {t.cpu_pct:5.1f} {t.runq_pct:5.1f} "
                f"{t.io_pct:5.1f} {t.sleep_pct:5.1f}"
            )
    if d.profile.total:
        lines.append(f"on-CPU: {summary(d.profile)}")
    if d.system and d.profile.total:
        hot = function_table(d.profile, "self")[:5]
        lines.append("hottest functions (self % of the machine's samples): " + ", ".join(
            f"{r.name} ({module_name(r.module)}) {r.self_share:.0%}" for r in hot))  # fmt: skip
    if d.language_profile is not None and d.language_profile.total:
        lines.append(f"{d.language} stacks ({d.language_profile.event}): "
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
    elif d.own_findings() and d.own_findings()[0].kind.startswith("kernel-"):
        lines += [f"advice: {tip}" for tip in catalogue.advice(d.own_findings()[0].kind)]
    elif d.own_findings() and d.own_findings()[0].kind == "pg-lock":
        lines += [line for line in d.own_findings()[0].details if line.startswith("advice: ")]
    used = [i.name for i in d.capabilities.items if i.used]
    if used:
        lines.append(f"used: {', '.join(used)}")
    missing = [i.name for i in d.capabilities.items if not i.available]
    if missing:
        lines.append(f"not available here: {', '.join(missing)}")
    if report:
        lines.append(f"report: {report}")
    if saved:
        lines.append(f"saved: {saved}")
    return "\n".join(lines)


CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1240px;color:#111;
padding:0 1em}
h1{font-size:1.4em}h2{font-size:1.15em;border-bottom:1px solid #999;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #bbb;padding:2px 8px;
text-align:left;vertical-align:top}td.n{text-align:right;font-variant-numeric:tabular-nums}
.verdict{border:2px solid #111;padding:.6em 1em;font-size:1.1em}.muted{color:#555}
.bar{display:inline-block;height:.8em;background:#555;vertical-align:middle}
code,pre{font:12px ui-monospace,monospace}pre{white-space:pre-wrap;background:#f4f4f4;padding:.5em}
svg{max-width:100%;height:auto}
"""


def _e(text: object) -> str:
    return html.escape(str(text))


def _table(head: list[str], rows: list[list[object]], numeric: set[int] | None = None) -> str:
    numeric = numeric or set()
    out = ["<table><tr>", *(f"<th>{_e(h)}</th>" for h in head), "</tr>"]
    for row in rows:
        cells = [
            f'<td class="n">{_e(v)}</td>' if i in numeric else f"<td>{_e(v)}</td>"
            for i, v in enumerate(row)
        ]
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "".join(out)


def _bar(pct: float) -> str:
    return f'<span class="bar" style="width:{max(0.0, min(pct, 100)) * 1.5:.0f}px"></span>'


def _flame(
    folded: dict[str, int], title: str, modules: dict[str, str], unit: str = "samples"
) -> str:
    """The flame graph renderer's SVG, inline (its XML prolog dropped); `modules` name each
    frame's module on hover and mark kernel frames."""
    if not folded:
        return '<p class="muted">No stacks recorded.</p>'
    svg = render(folded, title=title, unit=unit, modules=modules)
    return svg[svg.index("<svg") :]


def _section_verdict(d: Diagnosis) -> str:
    if not d.findings:
        return "<p>No findings.</p>"
    top = d.findings[0]
    out = [f'<div class="verdict"><b>Verdict:</b> {_e(top.headline)}</div><ul>']
    out += [f"<li>{_e(x)}</li>" for x in top.details]
    out.append("</ul>")
    if len(d.findings) > 1:
        out.append("<p>Also:</p><ul>")
        out += [f"<li>{_e(f.headline)}</li>" for f in d.findings[1:]]
        out.append("</ul>")
    return "".join(out)


def _section_capabilities(d: Diagnosis) -> str:
    rows = [
        ["yes" if i.available else "NO", "used" if i.used else "-", i.name, i.used_for, i.detail]
        for i in d.capabilities.items
    ]
    cpu = d.capabilities
    head = f"<p>CPU: {_e(cpu.cpu_name)} ({_e(cpu.cpu_vendor)} family {cpu.cpu_family} model "
    head += f"{cpu.cpu_model}), {d.cpus} CPUs.</p>"
    notes = "".join(f"<li>{_e(n)}</li>" for n in d.notes)
    return (
        head
        + _table(["available", "what", "used for", "evidence"], rows)
        + (f"<ul>{notes}</ul>" if notes else "")
    )


def _thread_row(t: ThreadStat) -> list[object]:
    return [
        t.tid, t.label, t.comm, f"{t.cpu_pct:.1f}", f"{t.runq_pct:.1f}", f"{t.io_pct:.1f}",
        f"{t.sleep_pct:.1f}", f"{t.runq_wait_us:.0f}", " <- ".join(t.frames[:3]),
    ]  # fmt: skip


def _section_threads(d: Diagnosis) -> str:
    head = ["tid", "thread", "comm", "CPU %", "run queue %", "I/O %", "sleep %",
            "mean run-queue wait us", "running"]  # fmt: skip
    numeric = {0, 3, 4, 5, 6, 7}
    active = [t for t in d.threads if t.cpu_pct + t.runq_pct + t.io_pct >= 0.5][:40]
    rest = [t for t in d.threads if t not in active]
    out = [
        "<p>Percent of the window for each thread (100 = one whole CPU): on the CPU, waiting in "
        "the run queue for a CPU, in uninterruptible sleep (I/O), asleep; and the mean wait in the "
        "run queue each time the thread was scheduled in (from schedstat).</p>",
        _table(head, [_thread_row(t) for t in active], numeric),
    ]
    if rest:
        out.append(f"<details><summary>{len(rest)} threads idle through the window</summary>")
        out.append(_table(head, [_thread_row(t) for t in rest], numeric) + "</details>")
    return "".join(out)


def _section_processes(d: Diagnosis) -> str:
    m = d.system
    assert m is not None
    split = "".join(
        f"<tr><td>{_e(k)}</td><td class='n'>{v:.1f}</td><td>{_bar(v)}</td></tr>"
        for k, v in m.split.items()
    )
    pressure = (
        f"<p>CPU pressure (PSI): runnable work waited for a CPU {m.pressure:.0%} of the window.</p>"
        if m.pressure is not None
        else ""
    )
    head = ["pid", "command", "CPU %", "user %", "kernel %", "samples", "hottest function",
            "busiest threads (tid: % of a CPU)", "drill in"]  # fmt: skip
    rows = [
        [p.pid, p.command, f"{p.cpu_pct:.1f}", f"{p.user_pct:.1f}", f"{p.kernel_pct:.1f}",
         p.samples, p.hottest, ", ".join(f"{t.comm} {t.tid}: {t.cpu_pct:.1f}" for t in p.threads),
         p.drill_in]
        for p in m.processes[:40]
    ]  # fmt: skip
    return (
        f"<p>Time of all {m.cpus} CPUs over the window (/proc/stat), in percent:</p>"
        + f"<table><tr><th>state</th><th>%</th><th></th></tr>{split}</table>"
        + pressure
        + "<p>Processes by on-CPU samples (percent of one CPU; user and kernel by where each "
        "sample's innermost frame was):</p>" + _table(head, rows, {0, 2, 3, 4, 5})
    )


def _section_cpu(d: Diagnosis) -> str:
    p = d.profile
    if not p.total:
        return "<p>No on-CPU samples.</p>"
    out = [f"<p>{p.total} samples of {_e(p.event)}: {_e(summary(p))}</p>"]
    out.append(_flame(p.folded(), f"On-CPU: {d.target}", modules_of(p)))
    top_down = [
        [r.name, module_name(r.module), f"{100 * r.total_share:.1f}", f"{100 * r.self_share:.1f}"]
        for r in function_table(p, "total")[:25]
    ]
    bottom_up = [
        [r.name, module_name(r.module), f"{100 * r.self_share:.1f}", f"{100 * r.total_share:.1f}"]
        for r in function_table(p, "self")[:25]
    ]
    modules = [
        [r.name, f"{100 * r.total_share:.1f}", f"{100 * r.self_share:.1f}"]
        for r in module_table(p, "self")[:15]
    ]
    lp = d.language_profile
    if lp is not None and lp.total:
        out.append(f"<h3>{_e(d.language.title())} stacks ({_e(lp.event)})</h3>")
        out.append(f"<p>{lp.total} samples of the busy threads: {_e(summary(lp))}</p>")
        out.append(_flame(lp.folded(), f"{d.language.title()} on-CPU: {d.target}", modules_of(lp)))
        rows = [
            [r.name, r.module, f"{100 * r.self_share:.1f}", f"{100 * r.total_share:.1f}"]
            for r in function_table(lp, "self")[:15]
        ]
        out.append(_table(["function", "file", "self %", "total %"], rows, {2, 3}))
    out.append("<h3>Top-down (by total time)</h3>")
    out.append(_table(["function", "module", "total %", "self %"], top_down, {2, 3}))
    out.append("<h3>Bottom-up (by self time)</h3>")
    out.append(_table(["function", "module", "self %", "total %"], bottom_up, {2, 3}))
    out.append("<h3>By module</h3>")
    out.append(_table(["module", "total %", "self %"], modules, {1, 2}))
    return "".join(out)


def _section_offcpu(d: Diagnosis) -> str:
    off = d.offcpu
    if off is None:
        return '<p class="muted">Off-CPU analysis was not run (see capabilities).</p>'
    labels = {"io": "I/O (uninterruptible)", "sleep": "sleep / wait", "runqueue": "preempted"}
    rows = [
        [labels.get(k, k), f"{off.total_us(k) / 1000:.1f}"] for k in ("sleep", "io", "runqueue")
    ]
    rq = off.runqueue
    out = [
        _table(["state when switched out", "off-CPU ms (all threads)"], rows, {1}),
        f"<p>Run-queue latency (woken or preempted, to running again): {rq.count} waits, mean "
        f"{rq.mean_us:.0f} us, p50 {rq.p50_us:.0f} us, p99 {rq.p99_us:.0f} us, max "
        f"{rq.max_us:.0f} us.</p>",
        _flame(off.folded(), "Off-CPU time (microseconds) by switch-out stack", off.modules, "us"),
    ]
    for kind in ("io", "sleep", "runqueue"):
        top = off.top(kind, 5)
        if top:
            out.append(f"<h3>Longest {labels[kind]} stacks</h3>")
            out.append(
                _table(
                    ["ms", "stack (root first)"],
                    [[f"{us / 1000:.1f}", s.replace(";", " > ")] for s, us in top],
                    {0},
                )
            )
    return "".join(out)


def _section_locks(d: Diagnosis) -> str:
    locks = d.locks
    if locks is None:
        return '<p class="muted">Lock analysis was not run (see capabilities).</p>'
    rows = [
        [w.lock, w.kind, f"{w.wait_ms:.1f}", w.count, f"{w.max_ms:.2f}", ", ".join(w.waiters[:4]),
         w.site]
        for w in (locks.user + locks.kernel)[:20]
    ]  # fmt: skip
    head = ["lock", "kind", "wait ms", "waits", "max ms", "waiters", "where"]
    out = [
        "<p>mutex = contended user-space lock (futex); condition = waiting for a signal (idle "
        "workers, condition variables: not contention); kernel:* = kernel lock contention.</p>",
        _table(head, rows, {2, 3, 4}) if rows else "<p>No lock waits recorded.</p>",
    ]
    out += [f'<p class="muted">{_e(n)}</p>' for n in locks.notes]
    return "".join(out)


def _section_topdown(d: Diagnosis) -> str:
    td = d.topdown
    if td.available:
        rows = [[k, f"{v:.1f}", _bar(v)] for k, v in td.level1.items()]
        out = [f"<p>Method: {_e(td.method)}; {_e(td.evidence)}.</p>"]
        out.append(
            "<table><tr><th>level 1</th><th>% of slots</th><th></th></tr>"
            + "".join(f"<tr><td>{_e(a)}</td><td class='n'>{b}</td><td>{c}</td></tr>"
                      for a, b, c in rows)
            + "</table>"
        )  # fmt: skip
        for parent, kids in td.level2.items():
            parts = ", ".join(f"{k} {v:.1f}%" for k, v in kids.items())
            out.append(f"<p>{_e(parent)}: {_e(parts)}</p>")
        return "".join(out)
    out = [f"<p><b>TMAM unavailable</b>: {_e(td.evidence)}.</p>"]
    if td.software:
        out.append(
            "<p>Software signals instead (not TMAM): where the time of the threads that worked "
            "(on a CPU, in the run queue or in I/O for 1 % of the window or more) went.</p>"
        )
        out.append(
            "<table><tr><th>state</th><th>% of thread time</th><th></th></tr>"
            + "".join(f"<tr><td>{_e(k)}</td><td class='n'>{v:.1f}</td><td>{_bar(v)}</td></tr>"
                      for k, v in td.software.items())
            + "</table>"
        )  # fmt: skip
    return "".join(out)


def _section_knobs(d: Diagnosis) -> str:
    out = []
    for kind in dict.fromkeys(d.kinds):
        tips = catalogue.advice(kind)
        if tips:
            out.append(f"<h3>{_e(catalogue.title(kind))}</h3><ul>")
            out += [f"<li>{_e(t)}</li>" for t in tips]
            out.append("</ul>")
    rows = [
        [
            s.name,
            "yes" if s.present else f"no: {s.reason}",
            s.why,
            s.evidence,
            json.dumps(s.knob),
        ]
        for s in d.suggestions
    ]
    if rows:
        out.append("<h3>Knobs</h3>")
        out.append(_table(["knob", "on this machine", "why", "measured", "hone definition"], rows))
        out.append(
            "<p><code>hone diagnose --suggest-project DIR</code> writes these into a "
            "<code>hone tune</code> project.</p>"
        )
    measured = [(what, m.verdict) for what, m in (("Heap", d.heap), ("Receive path", d.softirq))
                if m]  # fmt: skip
    if measured:
        out.append("<h3>Evidence for memory and network knobs</h3><ul>")
        out += [f"<li>{_e(what)}: {_e(text)}</li>" for what, text in measured]
        out.append("</ul>")
    return "".join(out) or "<p>No knobs suggested.</p>"


def to_html(d: Diagnosis) -> str:
    """One self-contained HTML file: inline CSS, inline SVG flame graphs with their script."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(d.created))
    sections = [("Verdict", _section_verdict(d))]
    if d.system:
        sections += [("Processes", _section_processes(d)),
                     ("On-CPU: flame graph, top-down and bottom-up", _section_cpu(d))]  # fmt: skip
    else:
        sections += [
            ("Hot threads", _section_threads(d)),
            ("On-CPU: flame graph, top-down and bottom-up", _section_cpu(d)),
            ("Off-CPU", _section_offcpu(d)),
            ("Locks", _section_locks(d)),
            ("Top-down microarchitecture analysis (TMAM)", _section_topdown(d)),
        ]
    sections += [
        ("What to tune", _section_knobs(d)),
        ("Capabilities used and unavailable", _section_capabilities(d)),
    ]
    body = "".join(
        f'<h2 id="s{i}">{_e(title)}</h2>{content}' for i, (title, content) in enumerate(sections)
    )
    nav = " | ".join(f'<a href="#s{i}">{_e(t)}</a>' for i, (t, _) in enumerate(sections))
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>hone diagnose: {_e(d.target)}</title><style>{CSS}</style></head><body>"
        f"<h1>hone diagnose: {_e(d.target)}</h1>"
        f'<p class="muted">{stamp}, {d.window_s:.1f} s window, {_e(d.language)} process, '
        f"{d.cpus} CPUs</p><p>{nav}</p>{body}</body></html>\n"
    )


def _thread_cpu(d: Diagnosis) -> dict[str, float]:
    """CPU % per thread name (threads of one name, a pool, summed); for the whole system, per
    command line (the processes of one command summed)."""
    out: dict[str, float] = {}
    named = [(p.command, p.cpu_pct) for p in d.system.processes] if d.system else []
    for label, pct in named or [(t.label, t.cpu_pct) for t in d.threads]:
        out[label] = out.get(label, 0.0) + pct
    return out


def _runtime_rows(a: Diagnosis, b: Diagnosis) -> list[tuple[str, str, str]]:
    def total(d: Diagnosis, field_name: str) -> float:
        return sum(getattr(t, field_name) for t in d.threads) / 100

    rows = [
        ("verdict", a.findings[0].headline if a.findings else "-",
         b.findings[0].headline if b.findings else "-"),
        ("window s", f"{a.window_s:.1f}", f"{b.window_s:.1f}"),
        ("on-CPU samples", str(a.profile.total), str(b.profile.total)),
    ]  # fmt: skip
    if a.system and b.system:
        rows.append(("CPUs busy", f"{a.system.busy_cpus:.2f}", f"{b.system.busy_cpus:.2f}"))
        for state in ("user", "system", "irq", "softirq", "iowait"):
            rows.append((f"{state} % of all CPUs", f"{a.system.split.get(state, 0):.1f}",
                         f"{b.system.split.get(state, 0):.1f}"))  # fmt: skip
    for label, name in (("CPUs busy", "cpu_pct"), ("run-queue wait", "runq_pct"),
                        ("I/O wait", "io_pct")):  # fmt: skip
        if a.threads or b.threads:
            rows.append((f"{label} (thread-s/s)", f"{total(a, name):.2f}", f"{total(b, name):.2f}"))
    if a.offcpu and b.offcpu:
        for kind in ("sleep", "io", "runqueue"):
            rows.append((f"off-CPU {kind} ms/s", _offcpu_rate(a, kind), _offcpu_rate(b, kind)))
    if a.locks and b.locks:
        rows.append(("contended lock wait ms/s", _lock_rate(a), _lock_rate(b)))
    return rows


def _offcpu_rate(d: Diagnosis, kind: str) -> str:
    assert d.offcpu is not None
    return f"{d.offcpu.total_us(kind) / 1000 / max(covered(d.offcpu, d.window_s), 1e-9):.1f}"


def _lock_rate(d: Diagnosis) -> str:
    assert d.locks is not None
    waited = sum(w.wait_ms for w in d.locks.contended())
    return f"{waited / max(covered(d.locks, d.window_s), 1e-9):.1f}"


def compare_text(a: Diagnosis, b: Diagnosis) -> str:
    """What moved between two diagnoses, for the terminal."""
    lines = [f"before: {a.target}", f"after:  {b.target}"]
    lines += [f"{name}: {x} -> {y}" for name, x, y in _runtime_rows(a, b)]
    if a.profile.total and b.profile.total:
        lines.append(f"on-CPU moves: {diff_summary(a.profile, b.profile)}")
        lines.append("self share by function (points of all on-CPU samples):")
        changes = [c for c in diff(a.profile, b.profile, measure="self") if abs(c.delta) >= 0.005]
        lines += ["  " + row for row in format_diff(changes, limit=10).splitlines()]
    ta, tb = _thread_cpu(a), _thread_cpu(b)
    threads_moved = sorted(set(ta) | set(tb), key=lambda n: -abs(tb.get(n, 0) - ta.get(n, 0)))
    if threads_moved:
        lines.append(f"{'processes' if a.system else 'threads'} whose CPU % moved most:")
        lines += [f"  {n}: {ta.get(n, 0.0):.1f} -> {tb.get(n, 0.0):.1f}" for n in threads_moved[:5]]
    return "\n".join(lines)


def compare_data(a: Diagnosis, b: Diagnosis) -> dict[str, Any]:
    """`--compare --json`: GET /api/diagnoses/NAME/compare's moves, with both targets and the
    runtime rows the terminal shows."""
    return {
        "before": a.target,
        "after": b.target,
        "runtime": [{"name": n, "before": x, "after": y} for n, x, y in _runtime_rows(a, b)],
        "summary": diff_summary(a.profile, b.profile),
        "functions": moves(diff(a.profile, b.profile, "function", "self")),
        "modules": moves(diff(a.profile, b.profile, "module", "self")),
    }


def compare_html(a: Diagnosis, b: Diagnosis) -> str:
    """One HTML file: the runtime comparison, function moves and a differential flame graph."""
    rows = _runtime_rows(a, b)
    moves = [
        [c.name, c.module, f"{100 * c.before:.1f}", f"{100 * c.after:.1f}", f"{100 * c.delta:+.1f}"]
        for c in diff(a.profile, b.profile, measure="self")[:25]
        if abs(c.delta) >= 0.005
    ]
    svg = diff_flamegraph_svg(a.profile, b.profile) if a.profile.total and b.profile.total else ""
    svg = svg[svg.index("<svg") :] if svg else "<p>One of the two has no on-CPU samples.</p>"
    body = (
        f"<h1>hone diagnose: compare</h1><p>before: {_e(a.target)}<br>after: {_e(b.target)}</p>"
        "<h2>Runtime</h2>"
        + _table(["", "before", "after"], [list(r) for r in rows])
        + "<h2>Functions (self % of on-CPU samples)</h2>"
        + f"<p>{_e(diff_summary(a.profile, b.profile))}</p>"
        + _table(["function", "module", "before %", "after %", "change"], moves, {2, 3, 4})
        + "<h2>Differential flame graph (widths: after; red grew, blue shrank)</h2>"
        + svg
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>hone diagnose: compare</title><style>{CSS}</style></head><body>{body}"
        "</body></html>\n"
    )
