"""A Go program: known as Go, its collector's time a finding in Go's terms (GOGC, GOMEMLIMIT),
its hot code named, and no gcc compiler-flags project offered."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hone.diagnose import golang
from hone.diagnose.comparison import compare_text
from hone.diagnose.fold import Frame
from hone.diagnose.golines import Line, LineTable
from hone.diagnose.pprof import to_pprof
from hone.diagnose.profile import Profile
from hone.diagnose.report import Diagnosis
from tests.diagnose.test_formats import _varints, decode

PROGRAMS = Path(__file__).parent / "programs"


def go_binary() -> str:
    """Debian's Go (deps/apt-diagnose-profile.txt installs golang-go), else the one on PATH."""
    debian = "/usr/lib/go/bin/go"
    found = debian if os.path.exists(debian) else shutil.which("go")
    assert found, "go is installed by deps/apt-diagnose-profile.txt (golang-go)"
    return found


@pytest.fixture(scope="module")
def go_programs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """programs/*.go built once, with a build cache of their own (half a second each)."""
    out = tmp_path_factory.mktemp("go")
    env = {**os.environ, "GOCACHE": str(out / "cache")}
    for source in ("gcheavy.go", "collatz.go"):
        argv = [go_binary(), "build", "-o", str(out / Path(source).stem), str(PROGRAMS / source)]
        subprocess.run(argv, env=env, check=True, timeout=300)
    return out


@pytest.mark.slow
def test_a_go_program_in_its_collector_is_told_gogc(hone_cli, go_programs, tmp_path) -> None:
    """A Go program building linked lists: before, `native`, 'CPU-bound in function
    runtime.mallocgc...' and a gcc compiler-flags project."""
    folder, project = tmp_path / "rep", tmp_path / "proj"
    done = hone_cli("diagnose", "-o", str(folder), "--no-locks", "--suggest-project",
                    str(project), "--", str(go_programs / "gcheavy"), "3")  # fmt: skip
    assert done.returncode == 0, done.stderr
    d = Diagnosis.load(folder / "diagnosis.hone")
    assert d.language == "go"
    assert d.go_gc is not None and d.go_gc.evidence, d.go_gc
    assert d.go_gc.share >= golang.GC_SHARE
    assert next(iter(d.go_gc.callers)) == "main.build"
    finding = next(f for f in d.findings if f.kind == "go-gc")
    assert "Go program in garbage collection" in finding.headline
    assert "main.build" in finding.headline
    assert "advice: GOGC" in done.stdout and "GOMEMLIMIT" in done.stdout
    assert not d.builds_faster() and "compiler-flags" not in done.stdout
    written = yaml.safe_load((project / "hone.yaml").read_text())
    assert written["knobs"]["gogc"]["config"]["key"] == "GOGC"
    assert "GOGC=100" in (project / "go.env").read_text().splitlines()
    assert str(go_programs / "gcheavy") in (project / "run.sh").read_text()
    assert hone_cli("check", str(project)).returncode == 0


@pytest.mark.slow
def test_a_cpu_bound_go_program_is_not_offered_gcc_flags(hone_cli, go_programs, tmp_path) -> None:
    """Arithmetic in one function: named as Go's, no compiler-flags project (gcc's flags do
    not build Go), Go's own profile-guided optimisation instead."""
    folder = tmp_path / "rep"
    done = hone_cli("diagnose", "-o", str(folder), "--no-locks", "--no-offcpu", "--",
                    str(go_programs / "collatz"), "2")  # fmt: skip
    assert done.returncode == 0, done.stderr
    d = Diagnosis.load(folder / "diagnosis.hone")
    assert d.language == "go"
    assert " s (go, " in done.stdout
    top = next(f for f in d.findings if f.own)  # beside other work a run-queue wait may lead
    assert top.kind == "cpu" and "function main.collatzSteps" in top.headline
    assert d.go_gc is not None and not d.go_gc.evidence
    assert "go-gc" not in d.kinds
    assert not d.builds_faster() and "compiler-flags" not in done.stdout
    assert "default.pgo" in done.stdout


def pgo_go() -> str:
    """A Go with profile-guided optimisation (1.21 and later): the one on PATH, the machine's
    own (Debian's 1.19 has none)."""
    for go in (shutil.which("go"), "/usr/local/go/bin/go"):
        if go and os.path.exists(go):
            said = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True,
                                  timeout=60)  # fmt: skip
            version = said.stdout.strip().removeprefix("go").split(".")
            if said.returncode == 0 and tuple(map(int, version[:2])) >= (1, 21):
                return go
    raise AssertionError("no Go 1.21+ on PATH (the machine's own Go: Debian's 1.19 has no PGO)")


@pytest.fixture(scope="module")
def ifacecall(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """ifacecall.go built plain and stripped by a PGO-capable Go, once, with a build cache of
    its own: a build sharing the user's cache once waited on it past the test's timeout. The
    first build compiles the runtime (14 s), the second reuses it."""
    go, out = pgo_go(), tmp_path_factory.mktemp("pgo")
    env = {**os.environ, "GOCACHE": str(out / "cache"), "GOTOOLCHAIN": "local",
           "GOTELEMETRY": "off", "GOFLAGS": ""}  # fmt: skip
    built = {"plain": out / "plain" / "ifacecall", "stripped": out / "stripped" / "ifacecall"}
    for kind, flags in (("plain", []), ("stripped", ["-ldflags=-s -w"])):
        argv = [go, "build", *flags, "-o", str(built[kind]), str(PROGRAMS / "ifacecall.go")]
        subprocess.run(argv, env=env, check=True, timeout=240)
    return built


@pytest.mark.slow
def test_a_stripped_go_binary_is_named_by_its_line_table(hone_cli, ifacecall, tmp_path) -> None:
    """Built with `-ldflags='-s -w'`, as release builds often are: perf names every Go frame
    `[ifacecall]`, and the verdict was `CPU-bound in function [ifacecall]`. The binary's own
    line table, which stripping keeps, names them."""
    binary, folder = ifacecall["stripped"], tmp_path / "rep"
    done = hone_cli("diagnose", "-o", str(folder), "--no-locks", "--no-offcpu", "--", str(binary))
    assert done.returncode == 0, done.stderr
    d = Diagnosis.load(folder / "diagnosis.hone")
    frames = {frame for (_, stack) in d.profile.stacks for frame in stack}
    named = {f.function for f in frames if f.module == str(binary)}
    assert {"main.main", "main.rounds"} <= named and not any(f.startswith("[") for f in named)
    top = next(f for f in d.findings if f.own)
    assert top.kind == "cpu" and "Mixer).Score of module ifacecall" in top.headline


def test_a_stripped_binary_has_the_lines_of_its_inlined_code(ifacecall) -> None:
    """Stripping removes the `go:func.*` symbol that locates the tables of inlined calls; the
    module's record, which the runtime reads, still does. Before, every address in inlined
    code of the stripped build had no lines."""
    plain, stripped = LineTable.open(ifacecall["plain"]), LineTable.open(ifacecall["stripped"])
    assert plain is not None and stripped is not None
    start, size = plain.text.address, plain.text.size
    assert (stripped.text.address, stripped.text.size) == (start, size)  # the same code
    inlined = 0
    for address in range(start, start + size, 13):
        function = plain.function(address)
        assert stripped.function(address) == function
        lines = plain.lines(address, function)
        assert stripped.lines(address, function) == lines, hex(address)
        inlined += bool(lines) and len(lines) > 1
    assert inlined > 1000


@pytest.mark.slow
def test_go_build_pgo_takes_hones_profile(hone_cli, ifacecall, tmp_path) -> None:
    """A hot interface call in a loop: Go's PGO, given hone's oncpu.pb.gz, devirtualises the
    call and inlines the callee, as with Go's own profile. Before, it refused the profile:
    `profile missing Function.start_line data`. The profile goes through what `go build -pgo`
    runs (preprofile, then the compiler on the main package): a whole `go build -pgo` compiles
    the runtime again with each new profile, 10 s here."""
    go, source, folder = pgo_go(), PROGRAMS / "ifacecall.go", tmp_path / "rep"
    binary = ifacecall["plain"]
    done = hone_cli("diagnose", "-o", str(folder), "--no-locks", "--no-offcpu", "--", str(binary))
    assert done.returncode == 0, done.stderr
    assert "cp oncpu.pb.gz default.pgo" in done.stdout
    profile = tmp_path / "default.pgo"
    tool = [go, "tool", "preprofile", "-i", str(folder / "oncpu.pb.gz"), "-o", str(profile)]
    read = subprocess.run(tool, capture_output=True, text=True, timeout=60)
    assert read.returncode == 0, read.stderr
    compile_ = [go, "tool", "compile", "-p", "main", "-o", str(tmp_path / "main.o"),
                f"-pgoprofile={profile}", "-m", "-d=pgodebug=1", str(source)]  # fmt: skip
    built = subprocess.run(compile_, capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    said = built.stdout + built.stderr
    assert "PGO devirtualizing interface call s.Score to Mixer.Score" in said
    assert "allows inlining for call main.Mixer.Score" in said
    assert "in function main.rounds" in said


def test_pprof_places_go_frames_by_address_and_line() -> None:
    """A Go binary's frames as Go's own profiler writes them: a Location with its address and
    a Line per inlined call (innermost first), Functions with file and start line; a kernel
    frame of the same stack as before, by name and module."""
    prog, kernel = "/srv/prog", "[kernel.kallsyms]"
    frames = (Frame("main.main", prog), Frame("main.work", prog), Frame("write", kernel))
    key = ("prog", frames)
    addresses = {key: {(0x10, 0x20, 0x99): 2, (0x10, 0x24, 0x99): 1}}
    profile = Profile(stacks={key: 3}, frequency_hz=100, addresses=addresses)
    work = "main.work", "/src/main.go"
    source = {0x10: [Line("main.main", "/src/main.go", 9, 5)],
              0x20: [Line("main.add", "/src/add.go", 3, 2), Line(*work, 20, 14)],
              0x24: [Line(*work, 21, 14)]}  # fmt: skip

    def lines(frame: Frame, pc: int, leaf: bool) -> tuple[int, list[Line]] | None:
        assert leaf == (frame.module == kernel)
        return (pc - 1, source[pc]) if frame.module == prog else None

    message = decode(gzip.decompress(to_pprof(profile, lines)))
    strings = [value.decode() for field, value in message if field == 6]
    functions = {}
    for value in (value for field, value in message if field == 5):
        parts = dict(decode(value))
        functions[parts[1]] = (strings[parts[2]], strings[parts.get(4, 0)], parts.get(5, 0))
    locations = {}
    for value in (value for field, value in message if field == 4):
        parts = decode(value)
        calls = [dict(decode(line)) for field, line in parts if field == 4]
        where = [(*functions[call[1]], call.get(2, 0)) for call in calls]
        locations[dict(parts)[1]] = (dict(parts).get(3, 0), where)
    samples = []
    for value in (value for field, value in message if field == 2):
        parts = dict(decode(value))
        stack = [locations[i] for i in _varints(parts[1])]
        samples.append((stack, _varints(parts[2])[0]))
    leaf = (0, [("write", kernel, 0, 0)])
    main = (0xF, [("main.main", "/src/main.go", 5, 9)])
    inlined = [("main.add", "/src/add.go", 2, 3), ("main.work", "/src/main.go", 14, 20)]
    assert samples == [
        ([leaf, (0x1F, inlined), main], 2),
        ([leaf, (0x23, [("main.work", "/src/main.go", 14, 21)]), main], 1),
    ]


def test_only_go_binaries_are_go(go_programs, tmp_path) -> None:
    """The build info, not the name: the interpreter running this test, a shell and a script
    are not Go; a Go binary renamed `node` is."""
    assert golang.is_go(go_programs / "collatz")
    renamed = tmp_path / "node"
    shutil.copy(go_programs / "collatz", renamed)
    assert golang.is_go(renamed)
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\necho go buildinf\n")
    for path in (sys.executable, "/bin/sh", script, tmp_path / "missing"):
        assert not golang.is_go(path), path


def _stack(*names: str) -> tuple[Frame, ...]:
    return tuple(Frame(name, "prog") for name in names)


def test_samples_split_into_marking_sweeping_and_allocation() -> None:
    root = ("runtime.goexit.abi0", "runtime.main", "main.main", "main.build")
    profile = Profile(stacks={
        ("prog", _stack("runtime.goexit.abi0", "runtime.gcBgMarkWorker", "runtime.gcDrain")): 3,
        ("prog", _stack(*root, "runtime.newobject", "runtime.mallocgc",
                        "runtime.deductAssistCredit", "runtime.gcAssistAlloc")): 1,
        ("prog", _stack("runtime.goexit.abi0", "runtime.bgsweep", "runtime.sweepone")): 2,
        ("prog", _stack(*root, "runtime.newobject", "runtime.memclrNoHeapPointers")): 2,
        ("prog", _stack(*root)): 2,
    })  # fmt: skip
    gc = golang.measure(profile, {"GOGC": "200"})
    assert (gc.mark, gc.sweep, gc.alloc) == (0.4, 0.2, 0.2)
    assert gc.evidence and gc.callers == {"main.build": 1.0}
    assert gc.verdict.startswith("Go program in garbage collection: 60% of its on-CPU samples")
    assert "GOGC=200" in gc.verdict
    assert golang.without_gc(profile).total == 2


def test_compare_sets_the_collectors_shares_side_by_side() -> None:
    """GOGC=100 against GOGC=400: the collector's share and the allocator's, each side's."""
    stacks = {("prog", _stack("main.main", "main.work")): 1}
    before, after = (Diagnosis(profile=Profile(stacks=dict(stacks)), language="go")
                     for _ in range(2))  # fmt: skip
    before.go_gc = golang.GoGc(mark=0.3, sweep=0.11, alloc=0.4)
    after.go_gc = golang.GoGc(mark=0.12, sweep=0.11, alloc=0.5)
    text = compare_text(before, after)
    assert "Go GC % of on-CPU samples: 41.0 -> 23.0" in text
    assert "Go allocation % of on-CPU samples: 40.0 -> 50.0" in text
