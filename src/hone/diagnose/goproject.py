"""`--suggest-project` for a Go command: its runtime's own knobs, GOGC and GOMAXPROCS.

They are environment variables the Go runtime reads at its start, not sysctls: the project keeps
them in `go.env` (config knobs, `KEY=value` lines), and `run.sh` exports that file's variables
and times the diagnosed command, in the folder the project was written from. GOMEMLIMIT is
left to the advice: a soft memory cap is a choice about the machine's memory, which a timing
benchmark cannot weigh."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from hone.diagnose.flags import beside, header_of
from hone.diagnose.report import Diagnosis
from hone.project.yamlio import dump_with_header

#: GOGC's values: the heap may grow by this many percent of the live heap before a collection
#: starts (100, Go's default): larger is fewer collections and more memory.
GOGC = [25, 50, 100, 200, 400, 800]

SCRIPT = """\
#!/bin/sh
# Written by `hone diagnose --suggest-project`: run the command with the Go runtime's variables
# in go.env and print its seconds.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
set -a
. "$here/go.env"
set +a
cd {directory}
start=$(date +%s.%N)
{run} >/dev/null
end=$(date +%s.%N)
awk "BEGIN {{ printf \\"seconds: %.4f\\\\n\\", $end - $start }}"
"""


def _start(settings: dict[str, str], cpus: int) -> tuple[int, int]:
    """GOGC and GOMAXPROCS as the program ran (Go's defaults where unset or not a number)."""
    gogc, procs = settings.get("GOGC", ""), settings.get("GOMAXPROCS", "")
    return (int(gogc) if gogc.isdigit() and int(gogc) > 0 else 100,
            min(int(procs), cpus) if procs.isdigit() and int(procs) > 0 else cpus)  # fmt: skip


def knobs(gogc: int, cpus: int) -> dict[str, dict]:
    def key(name: str) -> dict:
        return {"file": "go.env", "format": "equals", "key": name, "restart": False}

    found = {"gogc": {"type": "ordinal", "values": sorted({*GOGC, gogc}), "config": key("GOGC")}}
    if cpus > 1:
        found["gomaxprocs"] = {"type": "int", "range": [1, cpus], "config": key("GOMAXPROCS")}
    return found


def write(d: Diagnosis, folder: Path) -> Path:
    """Write hone.yaml, go.env and run.sh into `folder`; returns hone.yaml."""
    cpus = os.cpu_count() or 1
    gogc, procs = _start(d.go_gc.settings if d.go_gc else {}, cpus)
    program = d.command[0]
    if "/" in program and Path(program).exists():
        program = str(Path(program).resolve())
    run = shlex.join([program, *d.command[1:]])
    finding, also = beside(d)
    name = Path(program).name
    project = {
        "name": f"go-{name}"[:60],
        "description": f"Go runtime settings for: {finding.headline}"[:200],
        "knobs": {**knobs(gogc, cpus), **{s.name: s.knob for s in also}},
        "benchmark": {"command": "sh run.sh", "timeout": 600},
        "metrics": {"seconds": {"pattern": r"seconds: ([0-9.]+)", "direction": "minimize"}},
        "tuning": {"budget": 12, "baseline": 3, "confirm": {"candidates": 2, "rounds": 3}},
    }
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["# Go runtime settings, edited by hone (config knobs) and exported by run.sh.",
             f"GOGC={gogc}"] + ([f"GOMAXPROCS={procs}"] if cpus > 1 else [])  # fmt: skip
    (folder / "go.env").write_text("\n".join(lines) + "\n")
    script = folder / "run.sh"
    script.write_text(SCRIPT.format(directory=shlex.quote(os.getcwd()), run=run))
    script.chmod(0o755)
    header = header_of(d, finding, also, [
        "# Go's runtime reads GOGC (how far the heap grows between collections: larger is fewer",
        "# collections, more memory) and GOMAXPROCS (the threads running Go code) at its start:",
        "# go.env holds them, run.sh exports them and times the command. With GOGC raised, a",
        "# GOMEMLIMIT (a soft memory cap, e.g. GOMEMLIMIT=1GiB in go.env) keeps the heap bounded.",
    ])  # fmt: skip
    path = folder / "hone.yaml"
    path.write_text(dump_with_header(header, project))
    return path
