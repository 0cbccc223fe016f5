"""`--suggest-project` for CPU-bound code: a compiler-flags project (optimisation level, target
ISA, loop unrolling, LTO, two-phase PGO), as examples/gcc-flags tunes them.

No kernel knob makes a hot user function cheaper; its build can. When the diagnosed command is a
program with its C or C++ source beside it (`./prog` and `prog.c`), the project rebuilds that
source and times the command: runnable as written. Otherwise the build line is a placeholder
marked TODO (hone cannot know how the program is built), and the rest is ready."""

from __future__ import annotations

import platform
import shlex
import time
from pathlib import Path

from hone.diagnose import catalogue
from hone.diagnose.catalogue import Suggestion
from hone.diagnose.report import Diagnosis
from hone.diagnose.verdict import Finding
from hone.project.yamlio import dump_with_header

SOURCES = {".c": "gcc", ".cc": "g++", ".cpp": "g++", ".cxx": "g++"}
#: Portable ISA levels: a build for x86-64-v3 runs on every machine of that level (and under
#: valgrind), where -march=native would tie it to this CPU.
MARCH = ["x86-64", "x86-64-v2", "x86-64-v3"]

FLAGS_CONF = """\
# Build flags, edited by hone (config knobs) and read by build_and_run.sh.
OPT=-O2
MARCH=x86-64
UNROLL=no
LTO=no
PGO=no
"""

SCRIPT = """\
#!/bin/sh
# Written by `hone diagnose --suggest-project`: build with the flags in flags.conf (PGO=yes: an
# instrumented build, a training run, then a build that uses the profile), run the program three
# times and print the fastest run's seconds.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out="${{HONE_WORKDIR:-/tmp}}/{name}"
mkdir -p "$out"
. "$here/flags.conf"
flags="$OPT"
[ -n "${{MARCH:-}}" ] && flags="$flags -march=$MARCH"
[ "$UNROLL" = yes ] && flags="$flags -funroll-loops"
[ "$LTO" = yes ] && flags="$flags -flto"
cd "$out"
build() {{
  {build}
}}
run() {{
  {run}
}}
rm -f ./*.gcda
if [ "$PGO" = yes ]; then
  build -fprofile-generate
  run >/dev/null
  build -fprofile-use -fprofile-correction -Wno-missing-profile
else
  build
fi
best=""
for _ in 1 2 3; do
  start=$(date +%s.%N)
  run >/dev/null
  end=$(date +%s.%N)
  t=$(awk "BEGIN {{ printf \\"%.4f\\", $end - $start }}")
  if [ -z "$best" ] || awk "BEGIN {{ exit !($t < $best) }}"; then best=$t; fi
done
echo "seconds: $best"
"""


def source_of(command: list[str]) -> Path | None:
    """The C or C++ source beside the diagnosed program (`./prog` -> `./prog.c`), if any."""
    if not command:
        return None
    program = Path(command[0])
    for suffix in SOURCES:
        candidate = program.with_name(program.name + suffix)
        if candidate.is_file():
            return candidate.resolve()
    return None


def knobs() -> dict[str, dict]:
    def key(name: str) -> dict:
        return {"file": "flags.conf", "format": "equals", "key": name, "restart": False}

    flag = {"type": "bool", "on": "yes", "off": "no"}
    found: dict[str, dict] = {
        "opt": {"type": "categorical", "values": ["-O1", "-O2", "-O3", "-Os"], "config": key("OPT")}
    }
    if platform.machine() in ("x86_64", "AMD64"):
        found["march"] = {"type": "categorical", "values": MARCH, "config": key("MARCH")}
    found["unroll"] = {**flag, "config": key("UNROLL")}
    found["lto"] = {**flag, "config": key("LTO")}
    found["pgo"] = {**flag, "config": key("PGO")}
    return found


def beside(d: Diagnosis) -> tuple[Finding, list[Suggestion]]:
    """The process's top finding, and the knobs of its other findings measured beside it (a
    large heap beside hot code: huge pages), which a project of the program's own knobs takes
    too."""
    finding, *others = d.own_findings()
    kinds = [f.kind for f in others if f.knobs]
    return finding, [s for s in catalogue.knobs_for(kinds, d.evidence(), d.context()) if s.present]


def header_of(d: Diagnosis, finding: Finding, also: list[Suggestion], why: list[str]) -> list[str]:
    """The comment that opens such a project's hone.yaml: where it came from, what was
    measured, `why` its knobs, and the other findings' knobs with their evidence."""
    header = [
        f"# Written by `hone diagnose --suggest-project` on {time.strftime('%Y-%m-%d %H:%M')}",
        f"# from the diagnosis of {d.target}.",
        f"# Measured: {finding.headline}",
        *why,
    ]
    if also:
        header.append("# Also measured, with the knobs it points to:")
        header += [f"#   {s.name}: {s.evidence or s.why}" for s in also]
    return header


def write(d: Diagnosis, folder: Path) -> Path:
    """Write hone.yaml, flags.conf and build_and_run.sh into `folder`; returns hone.yaml."""
    source = source_of(d.command)
    name = Path(d.command[0]).name if d.command else "program"
    if source is not None:
        compiler = SOURCES[source.suffix]
        build = f'{compiler} $flags "$@" -o ./{shlex.quote(name)} {shlex.quote(str(source))}'
        run = shlex.join([f"./{name}", *d.command[1:]])
    else:
        build = (
            'echo "TODO: build your program here with $flags (e.g. make CFLAGS=\\"$flags $*\\")"'
            " >&2; exit 1"
        )
        run = shlex.join(d.command) if d.command else 'echo "TODO: run your program here"'
    finding, also = beside(d)
    project = {
        "name": f"flags-{name}"[:60],
        "description": f"Compiler flags for: {finding.headline}"[:200],
        "knobs": {**knobs(), **{s.name: s.knob for s in also}},
        "benchmark": {"command": "sh build_and_run.sh", "timeout": 600},
        "metrics": {"seconds": {"pattern": r"seconds: ([0-9.]+)", "direction": "minimize"}},
        "tuning": {"budget": 16, "baseline": 3, "confirm": {"candidates": 2, "rounds": 3}},
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "flags.conf").write_text(FLAGS_CONF)
    script = folder / "build_and_run.sh"
    script.write_text(SCRIPT.format(name=name, build=build, run=run))
    script.chmod(0o755)
    header = header_of(d, finding, also, [
        "# No kernel knob makes this code cheaper; its build can: optimisation level, target ISA,",
        "# loop unrolling, link-time optimisation and profile-guided optimisation (flags.conf,",
        "# read by build_and_run.sh, which prints the fastest of three runs).",
    ])  # fmt: skip
    if source is None:
        header += [
            "# TODO: the build line in build_and_run.sh is a placeholder: build your program",
            "# there with $flags (hone found no C or C++ source beside it), then: hone check .",
        ]
    path = folder / "hone.yaml"
    path.write_text(dump_with_header(header, project))
    return path
