"""A Node.js program: its JavaScript named by function and script in the findings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hone.diagnose import nodejs
from hone.diagnose.fold import Frame
from hone.diagnose.report import Diagnosis

PRIMES = Path(__file__).parent / "programs" / "primes.js"


@pytest.mark.slow
def test_a_node_command_gets_its_javascript_named(hone_cli, tmp_path: Path) -> None:
    """hone runs node with the flags that have V8 write its perf map: before, the verdict was
    'CPU-bound in function [perf-26086.map]' and the advice a compiler-flags project."""
    folder = tmp_path / "rep"
    done = hone_cli("diagnose", "-o", str(folder), "--no-locks", "--", "node", str(PRIMES), "3",
                    cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    d = Diagnosis.load(folder / "diagnosis.hone")
    assert d.language == "node"
    cpu = next(f for f in d.findings if f.kind == "cpu")
    assert "function countPrimesBelow of module primes.js" in cpu.headline
    assert (Frame("countPrimesBelow", str(PRIMES)) in
            {frame for (_, frames) in d.profile.stacks for frame in frames})  # fmt: skip
    assert not d.builds_faster()
    assert "compiler-flags" not in done.stdout
    assert not any("perf-basic-prof" in note for note in d.notes)
    assert not list(tmp_path.glob("isolate-*.log"))  # V8's log of --perf-basic-prof
    # V8's map of the ended node, moved out of /tmp beside perf.data
    assert not Path(f"/tmp/perf-{d.pid}.map").exists()
    assert "countPrimesBelow" in (folder / f"perf-{d.pid}.map").read_text()


@pytest.mark.slow
def test_a_running_node_without_a_perf_map_is_told_how_to_restart(diagnose_running) -> None:
    env_flags = os.environ.get("NODE_OPTIONS", "")
    assert "perf-basic-prof" not in env_flags
    _, d, folder = diagnose_running(["node", str(PRIMES), "60"], 0.5, "--duration", "1.5",
                                  "--no-locks", "--no-offcpu")  # fmt: skip
    assert d.language == "node"
    assert any("NODE_OPTIONS='--perf-basic-prof-only-functions" in n for n in d.notes), d.notes
    assert "node without --perf-basic-prof" in (folder / "report.html").read_text()


def test_v8_map_names_become_function_and_script() -> None:
    stack = (
        Frame("node::Start", "/usr/bin/node"),
        Frame("JS:~ /srv/app.js:1:1", "/tmp/perf-7.map"),
        Frame("LazyCompile:~handle /app/server.js:10", "/tmp/perf-7.map"),
        Frame("JS:*Module._compile node:internal/modules/cjs/loader:1483:37", "/tmp/perf-7.map"),
        Frame("JS:^parse /srv/my app/lib.js:3:9", "/tmp/perf-7.map"),
        Frame("Builtin:InterpreterEntryTrampoline", "/tmp/perf-7.map"),
        Frame("java.lang.String::hashCode", "/tmp/perf-8.map"),
    )
    assert nodejs.script_frames(stack) == (
        Frame("node::Start", "/usr/bin/node"),
        Frame("(anonymous)", "/srv/app.js"),
        Frame("handle", "/app/server.js"),
        Frame("Module._compile", "node:internal/modules/cjs/loader"),
        Frame("parse", "/srv/my app/lib.js"),
        Frame("Builtin:InterpreterEntryTrampoline", "/tmp/perf-7.map"),
        Frame("java.lang.String::hashCode", "/tmp/perf-8.map"),
    )


def test_node_options_keep_the_users_own() -> None:
    flags = "--perf-basic-prof-only-functions --interpreted-frames-native-stack"
    assert nodejs.options({}) == flags
    mine = {"NODE_OPTIONS": "--max-old-space-size=512 --interpreted-frames-native-stack"}
    assert nodejs.options(mine) == (
        "--max-old-space-size=512 --interpreted-frames-native-stack "
        "--perf-basic-prof-only-functions"
    )


@pytest.mark.slow
def test_node_under_a_shell_is_named_and_offered_no_compiler_flags(hone_cli, tmp_path) -> None:
    """The shell is the native main process; its node child's JavaScript is the hot code, and
    no build flag of anyone's reaches it."""
    folder = tmp_path / "rep"
    script = f"node {PRIMES} 3; true"  # `; true`: the shell waits instead of exec'ing node
    done = hone_cli("diagnose", "-o", str(folder), "--no-locks", "--", "sh", "-c", script)
    assert done.returncode == 0, done.stderr
    d = Diagnosis.load(folder / "diagnosis.hone")
    assert d.language == "native"
    cpu = next(f for f in d.findings if f.kind == "cpu")
    assert "function countPrimesBelow of module primes.js" in cpu.headline
    assert not d.builds_faster()
    assert "compiler-flags" not in done.stdout
