"""A diagnosis as one self-contained HTML file: inline CSS, inline SVG flame graphs with their
script, one section per view (verdict, threads or processes, on- and off-CPU, locks, top-down,
knobs, capabilities)."""

from __future__ import annotations

import html
import json
import time

from hone.diagnose import catalogue
from hone.diagnose.flamegraph import modules_of, render
from hone.diagnose.machine import SAMPLES, hone_line
from hone.diagnose.report import TRACING_SAID, Diagnosis, span
from hone.diagnose.tables import function_table, module_name, module_table, summary
from hone.diagnose.threads import ThreadStat

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


def escape(text: object) -> str:
    return html.escape(str(text))


def table(head: list[str], rows: list[list[object]], numeric: set[int] | None = None) -> str:
    numeric = numeric or set()
    out = ["<table><tr>", *(f"<th>{escape(h)}</th>" for h in head), "</tr>"]
    for row in rows:
        cells = [
            f'<td class="n">{escape(v)}</td>' if i in numeric else f"<td>{escape(v)}</td>"
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
    out = [f'<div class="verdict"><b>Verdict:</b> {escape(top.headline)}</div><ul>']
    out += [f"<li>{escape(x)}</li>" for x in top.details]
    out.append("</ul>")
    if len(d.findings) > 1:
        out.append("<p>Also:</p><ul>")
        out += [f"<li>{escape(f.headline)}</li>" for f in d.findings[1:]]
        out.append("</ul>")
    if d.syscalls:
        out.append(f"<p>System calls (counted over {d.syscalls.seconds:.1f} s): "
                   f"{escape(d.syscalls.verdict)}</p>")  # fmt: skip
    return "".join(out)


def _section_capabilities(d: Diagnosis) -> str:
    rows = [
        ["yes" if i.available else "NO", "used" if i.used else "-", i.name, i.used_for, i.detail]
        for i in d.capabilities.items
    ]
    cpu = d.capabilities
    head = (
        f"<p>CPU: {escape(cpu.cpu_name)} ({escape(cpu.cpu_vendor)} family {cpu.cpu_family} "
        f"model {cpu.cpu_model}), {d.cpus} CPUs.</p>"
    )
    notes = "".join(f"<li>{escape(n)}</li>" for n in d.notes)
    if d.tracing_share:
        head += f"<p>Tracing overhead: {escape(TRACING_SAID.format(share=d.tracing_share))}.</p>"
    return (
        head
        + table(["available", "what", "used for", "evidence"], rows)
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
        table(head, [_thread_row(t) for t in active], numeric),
    ]
    if rest:
        out.append(f"<details><summary>{len(rest)} threads idle through the window</summary>")
        out.append(table(head, [_thread_row(t) for t in rest], numeric) + "</details>")
    return "".join(out)


def _section_processes(d: Diagnosis) -> str:
    m = d.system
    assert m is not None
    split = "".join(
        f"<tr><td>{escape(k)}</td><td class='n'>{v:.1f}</td><td>{_bar(v)}</td></tr>"
        for k, v in m.split.items()
    )
    pressure = (
        f"<p>CPU pressure (PSI): runnable work waited for a CPU {m.pressure:.0%} of the window.</p>"
        if m.pressure is not None
        else ""
    )
    head = ["pid", "command", "CPU %", "user %", "kernel %", "samples", "sized by",
            "hottest function", "busiest threads (tid: % of a CPU)", "drill in"]  # fmt: skip
    rows = [
        [p.pid, p.command, f"{p.cpu_pct:.1f}", f"{p.user_pct:.1f}", f"{p.kernel_pct:.1f}",
         p.samples, p.source, p.hottest,
         ", ".join(f"{t.comm} {t.tid}: {t.cpu_pct:.1f}{' (samples)' if t.source == SAMPLES else ''}"
                   for t in p.threads), p.drill_in]
        for p in m.processes[:40]
    ]  # fmt: skip
    return (
        f"<p>Time of all {m.cpus} CPUs over the window (/proc/stat), in percent:</p>"
        + f"<table><tr><th>state</th><th>%</th><th></th></tr>{split}</table>"
        + pressure
        + "<p>Processes by CPU time in percent of one CPU, sized by the kernel's count "
        "(/proc/PID/stat at the window's ends), or by on-CPU samples for a process that ended "
        "inside the window; user and kernel split as its samples' innermost frames:</p>"
        + table(head, rows, {0, 2, 3, 4, 5})
        + "".join(f"<p>{escape(line)}.</p>" for line in hone_line(m))
    )


def _section_cpu(d: Diagnosis) -> str:
    p = d.profile
    if not p.total:
        return "<p>No on-CPU samples.</p>"
    out = [f"<p>{p.total} samples of {escape(p.event)}: {escape(summary(p))}</p>"]
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
        # py-spy's, also of a native process's Python programs
        out.append(f"<h3>Python stacks ({escape(lp.event)})</h3>")
        out.append(f"<p>{lp.total} samples of the busy threads: {escape(summary(lp))}</p>")
        out.append(_flame(lp.folded(), f"Python on-CPU: {d.target}", modules_of(lp)))
        rows = [
            [r.name, r.module, f"{100 * r.self_share:.1f}", f"{100 * r.total_share:.1f}"]
            for r in function_table(lp, "self")[:15]
        ]
        out.append(table(["function", "file", "self %", "total %"], rows, {2, 3}))
    out.append("<h3>Top-down (by total time)</h3>")
    out.append(table(["function", "module", "total %", "self %"], top_down, {2, 3}))
    out.append("<h3>Bottom-up (by self time)</h3>")
    out.append(table(["function", "module", "self %", "total %"], bottom_up, {2, 3}))
    out.append("<h3>By module</h3>")
    out.append(table(["module", "total %", "self %"], modules, {1, 2}))
    return "".join(out)


def _section_offcpu(d: Diagnosis) -> str:
    off = d.offcpu
    if off is None:
        return '<p class="muted">Off-CPU analysis was not run (see capabilities).</p>'
    labels = {"io": "I/O (uninterruptible)", "sleep": "sleep / wait", "runqueue": "run queue"}
    rows = [
        [labels.get(k, k), f"{off.total_us(k) / 1000:.1f}"] for k in ("sleep", "io", "runqueue")
    ]
    rq = off.runqueue
    out = [
        table(["waiting for", "off-CPU ms (all threads)"], rows, {1}),
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
                table(
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
        table(head, rows, {2, 3, 4}) if rows else "<p>No lock waits recorded.</p>",
    ]
    out += [f'<p class="muted">{escape(n)}</p>' for n in locks.notes]
    return "".join(out)


def _section_topdown(d: Diagnosis) -> str:
    td = d.topdown
    if td.available:
        rows = [[k, f"{v:.1f}", _bar(v)] for k, v in td.level1.items()]
        out = [f"<p>Method: {escape(td.method)}; {escape(td.evidence)}.</p>"]
        out.append(
            "<table><tr><th>level 1</th><th>% of slots</th><th></th></tr>"
            + "".join(f"<tr><td>{escape(a)}</td><td class='n'>{b}</td><td>{c}</td></tr>"
                      for a, b, c in rows)
            + "</table>"
        )  # fmt: skip
        for parent, kids in td.level2.items():
            parts = ", ".join(f"{k} {v:.1f}%" for k, v in kids.items())
            out.append(f"<p>{escape(parent)}: {escape(parts)}</p>")
        return "".join(out)
    out = [f"<p><b>TMAM unavailable</b>: {escape(td.evidence)}.</p>"]
    if td.software:
        out.append(
            "<p>Software signals instead (not TMAM): where the time of the threads that worked "
            "(on a CPU, in the run queue or in I/O for 1 % of the window or more) went.</p>"
        )
        out.append(
            "<table><tr><th>state</th><th>% of thread time</th><th></th></tr>"
            + "".join(f"<tr><td>{escape(k)}</td><td class='n'>{v:.1f}</td><td>{_bar(v)}</td></tr>"
                      for k, v in td.software.items())
            + "</table>"
        )  # fmt: skip
    return "".join(out)


def _section_knobs(d: Diagnosis) -> str:
    out = []
    for kind in dict.fromkeys(d.kinds):
        tips = catalogue.advice(kind)
        if tips:
            out.append(f"<h3>{escape(catalogue.title(kind))}</h3><ul>")
            out += [f"<li>{escape(t)}</li>" for t in tips]
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
        out.append(table(["knob", "on this machine", "why", "measured", "hone definition"], rows))
        out.append(
            "<p><code>hone diagnose --suggest-project DIR</code> writes these into a "
            "<code>hone tune</code> project.</p>"
        )
    measured = [(what, m.verdict) for what, m in (("Heap", d.heap), ("Receive path", d.softirq),
                                                  ("Garbage collection", d.gc),
                                                  ("Go's garbage collection", d.go_gc))
                if m]  # fmt: skip
    if measured:
        out.append("<h3>Evidence for memory, network and garbage collection</h3><ul>")
        out += [f"<li>{escape(what)}: {escape(text)}</li>" for what, text in measured]
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
        f'<h2 id="s{i}">{escape(title)}</h2>{content}'
        for i, (title, content) in enumerate(sections)
    )
    nav = " | ".join(f'<a href="#s{i}">{escape(t)}</a>' for i, (t, _) in enumerate(sections))
    return document(
        f"hone diagnose: {d.target}",
        f"<h1>hone diagnose: {escape(d.target)}</h1>"
        f'<p class="muted">{stamp}, {span(d.window_s)} s window, {escape(d.language)} process, '
        f"{d.cpus} CPUs</p><p>{nav}</p>{body}",
    )


def document(title: str, body: str) -> str:
    """A whole HTML page around `body` (already HTML), with the shared style."""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>{body}</body></html>\n"
    )
