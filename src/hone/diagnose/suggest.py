"""`--suggest-project`: a `hone tune` project with the knobs the diagnosis points at.

When hone started the diagnosed command itself, the benchmark is that command, timed (elapsed
seconds, minimised): runnable as written. For a running process hone cannot know the workload, so
the benchmark is a placeholder marked TODO that runs and prints a constant; `hone check` accepts
both, and the user replaces the placeholder with the real load before `hone tune`."""

from __future__ import annotations

import re
import shlex
import time
from pathlib import Path

from hone.diagnose.report import Diagnosis
from hone.errors import HoneError
from hone.project.yamlio import dump_with_header

TIMER = (
    "python3 -c 'import subprocess, sys, time; t = time.perf_counter(); "
    "code = subprocess.run(sys.argv[1:]).returncode; "
    'print(f"elapsed_s: {time.perf_counter() - t:.4f}"); sys.exit(code)\''
)
PLACEHOLDER = (
    "echo 'TODO: replace this command with your benchmark; it must print throughput: N'; "
    "echo 'throughput: 0'"
)


def project_name(target: str) -> str:
    """diagnose-<program>: from "pid 12 (server -c x)", "unit x.service, pid 12 (server)" or the
    command line "./bench -n 5"."""
    inner = re.search(r"\((\S+)", target) if re.match(r"pid |unit |\d+ processes", target) else None
    program = inner[1] if inner else (target.split() or [""])[0]
    words = re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(program).name)
    return f"diagnose-{words.strip('-.') or 'process'}"[:60]


def build(d: Diagnosis) -> dict:
    """The project as a mapping, in hone's format (docs/project-format.md).

    The knobs are looked up again here: what exists is a property of this machine, which may not
    be the one the diagnosis was recorded on."""
    d.suggest_knobs()
    knobs = {s.name: s.knob for s in d.suggestions if s.present}
    if not knobs:
        raise HoneError(
            "the diagnosis suggests no knob this machine has; nothing to write "
            f"(verdict: {d.findings[0].headline if d.findings else 'none'})"
        )
    if d.command:
        benchmark = {"command": f"{TIMER} {shlex.join(d.command)}", "timeout": 600}
        metrics = {"elapsed_s": {"pattern": r"elapsed_s: ([0-9.]+)", "direction": "minimize"}}
    else:
        benchmark = {"command": PLACEHOLDER, "timeout": 600}
        metrics = {"throughput": {"pattern": r"throughput: ([0-9.]+)", "direction": "maximize"}}
    verdict = d.findings[0].headline if d.findings else "no verdict"
    return {
        "name": project_name(d.target),
        "description": f"Knobs for: {verdict}"[:200],
        "knobs": knobs,
        "benchmark": benchmark,
        "metrics": metrics,
        "tuning": {"budget": 30, "baseline": 3},
    }


def write(d: Diagnosis, directory: str | Path) -> Path:
    """Write DIRECTORY/hone.yaml (never over an existing one); returns its path. CPU-bound
    native code gets a compiler-flags project (module flags), a Go command the Go runtime's
    knobs (module goproject), everything else kernel knobs."""
    folder = Path(directory)
    path = folder / "hone.yaml"
    if path.exists():
        raise HoneError("already exists; choose another folder", file=path)
    if d.builds_faster():
        from hone.diagnose import flags

        return flags.write(d, folder)
    if d.tunes_go_runtime():
        from hone.diagnose import goproject

        return goproject.write(d, folder)
    project = build(d)
    folder.mkdir(parents=True, exist_ok=True)
    header = [
        f"# Written by `hone diagnose --suggest-project` on {time.strftime('%Y-%m-%d %H:%M')}",
        f"# from the diagnosis of {d.target}.",
        f"# Verdict: {d.findings[0].headline if d.findings else 'none'}",
    ]
    if not d.command:
        header += [
            "# TODO: the benchmark is a placeholder. Replace its command with one that loads",
            "# the workload and prints the metric (or change `metrics`), then: hone check .",
        ]
    header.append("# Why each knob (the measurement that points to it):")
    header += [f"#   {s.name}: {s.evidence or s.why}" for s in d.suggestions if s.present]
    missing = [s for s in d.suggestions if not s.present]
    if missing:
        header.append("# Left out (not on this machine):")
        header += [f"#   {s.name}: {s.reason}" for s in missing]
    path.write_text(dump_with_header(header, project))
    return path
