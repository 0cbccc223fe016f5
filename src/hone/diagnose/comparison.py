"""What moved between two diagnoses (`hone diagnose --compare`): runtime rows, on-CPU moves by
function and a differential flame graph, for the terminal, JSON and HTML."""

from __future__ import annotations

from typing import Any

from hone.diagnose.diff import diff, diff_summary, format_diff, moves
from hone.diagnose.flamegraph import diff_flamegraph_svg
from hone.diagnose.golang import GoGc
from hone.diagnose.jvmgc import Gc, megabytes
from hone.diagnose.page import document, escape, table
from hone.diagnose.report import Diagnosis, span
from hone.diagnose.verdict import covered


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
        ("window s", span(a.window_s), span(b.window_s)),
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
    if a.syscalls and b.syscalls:
        rows.append(("system calls/s", f"{a.syscalls.rate:,.0f}", f"{b.syscalls.rate:,.0f}"))
    if a.gc or b.gc:  # one side alone too: a JVM's GC gone after a move to another runtime
        names = ("GC % of on-CPU samples", "GC collections", "GC pauses % of the window",
                 "heap used / max")  # fmt: skip
        rows += zip(names, _gc_cells(a.gc, a.window_s), _gc_cells(b.gc, b.window_s), strict=True)
    if a.go_gc or b.go_gc:  # a Go program before and after a change of GOGC
        names = ("Go GC % of on-CPU samples", "Go allocation % of on-CPU samples")
        rows += zip(names, _go_gc_cells(a.go_gc), _go_gc_cells(b.go_gc), strict=True)
    return rows


def _go_gc_cells(gc: GoGc | None) -> tuple[str, str]:
    """A Go program's collector and allocator (module golang), `-` where it is no Go program."""
    return (f"{100 * gc.share:.1f}", f"{100 * gc.alloc:.1f}") if gc else ("-", "-")


def _gc_cells(gc: Gc | None, window: float) -> tuple[str, str, str, str]:
    """A JVM's collector in the rows' words (module jvmgc): `-` where the diagnosis has no JVM,
    and for the counters' figures when its perf-data counters were not readable. Collections
    are counted over the window, so their rate is beside them for windows of other lengths."""
    if gc is None:
        return ("-", "-", "-", "-")
    share = f"{100 * gc.gc_share:.1f}"
    if not gc.counters:
        return (share, "-", "-", "-")
    count, full, _ = gc.counts()
    made = f"{count}{f' ({full} full)' if full else ''}, {count / max(window, 1e-9):.1f}/s"
    heap = (f"{megabytes(gc.heap_used)} / {megabytes(gc.heap_max)} "
            f"({gc.heap_used / gc.heap_max:.0%})") if gc.heap_max else "-"  # fmt: skip
    return (share, made, f"{100 * gc.pause_share:.1f}", heap)


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
        "<h1>hone diagnose: compare</h1>"
        f"<p>before: {escape(a.target)}<br>after: {escape(b.target)}</p>"
        "<h2>Runtime</h2>"
        + table(["", "before", "after"], [list(r) for r in rows])
        + "<h2>Functions (self % of on-CPU samples)</h2>"
        + f"<p>{escape(diff_summary(a.profile, b.profile))}</p>"
        + table(["function", "module", "before %", "after %", "change"], moves, {2, 3, 4})
        + "<h2>Differential flame graph (widths: after; red grew, blue shrank)</h2>"
        + svg
    )
    return document("hone diagnose: compare", body)
