"""Advice from evidence: every suggested knob cites the measurement behind it, NUMA knobs only
on machines with several nodes, no kernel knob for CPU-bound code (a compiler-flags project
instead), and nothing of the process's own when other work takes its CPUs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from benchmarks.diagnose.inputs import FLAGS, PROGRAMS
from hone.diagnose import catalogue, suggest
from hone.diagnose.profile import Profile
from hone.diagnose.report import Diagnosis, terminal
from hone.diagnose.threads import ThreadStat
from hone.diagnose.verdict import decide
from hone.errors import HoneError


def test_knobs_cite_their_measurement_and_numa_needs_nodes() -> None:
    found = catalogue.knobs_for(["io", "memory"], {"io": "I/O wait: 0.80 in fdatasync"})
    by_name = {s.name: s for s in found}
    assert by_name["vm.dirty_ratio"].evidence == "I/O wait: 0.80 in fdatasync"
    assert by_name["transparent_hugepage.enabled"].evidence == ""  # memory: no measurement given
    assert catalogue.knobs_for(["cpu"]) == []  # no THP, NUMA or scheduler knob for a hot function
    one_node = catalogue.numa_nodes() == 1
    for name in ("kernel.numa_balancing", "vm.zone_reclaim_mode"):
        if one_node:
            assert not by_name[name].present and "one NUMA node" in by_name[name].reason


def test_other_work_taking_the_cpus_is_no_reason_for_a_knob(tmp_path: Path) -> None:
    """Run-queue waits of a process that wants 0.8 of 2 CPUs: the neighbours' doing."""
    profile = Profile.from_folded({"app;main;hash_block": 80, "app;main;read": 20})
    threads = [ThreadStat(7, "app", 30, 28, 2, 50, 0, 20)]
    d = Diagnosis(profile, target="pid 7 (app)", pid=7, window_s=5, threads=threads,
                  findings=decide(profile, threads, 5, 2))  # fmt: skip
    assert d.findings[0].kind == "runqueue" and not d.findings[0].own
    assert "other work on the machine" in d.findings[0].headline
    path = suggest.write(d, tmp_path / "p")  # the process's own bottleneck: CPU-bound code
    project = yaml.safe_load(path.read_text())
    assert set(project["knobs"]) >= {"opt", "lto", "pgo"}
    assert "TODO" in path.read_text()  # hone started nothing: the build is the user's to fill


def test_cpu_bound_program_gets_a_runnable_compiler_flags_project(hone_cli, tmp_path: Path) -> None:
    source = tmp_path / "hot_split.c"
    shutil.copy(PROGRAMS / "hot_split.c", source)
    program = tmp_path / "hot_split"
    subprocess.run(["gcc", *FLAGS, "-o", str(program), str(source)], check=True)
    done = hone_cli(
        "diagnose", "-o", str(tmp_path / "rep"), "--suggest-project", str(tmp_path / "proj"),
        "--", str(program), "0.5",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "hot_work" in done.stdout
    # The window holds the whole run: the command waits (stopped) until the recorders have
    # started, so all of its 0.5 s of CPU time is on its thread, none of it before the window.
    d = Diagnosis.load(tmp_path / "rep" / "diagnosis.hone")
    assert d.findings[0].kind != "idle"
    assert sum(t.cpu_pct for t in d.threads) / 100 * d.window_s > 0.45
    text = (tmp_path / "proj" / "hone.yaml").read_text()
    project = yaml.safe_load(text)
    assert list(project["knobs"])[:1] == ["opt"] and "pgo" in project["knobs"]
    assert "hugepage" not in text and "numa" not in text and "TODO" not in text
    assert "# Measured: " in text
    assert hone_cli("check", str(tmp_path / "proj")).returncode == 0
    (tmp_path / "proj" / "flags.conf").write_text(
        (tmp_path / "proj" / "flags.conf").read_text().replace("PGO=no", "PGO=yes")
    )
    bench = subprocess.run(
        ["sh", "build_and_run.sh"], cwd=tmp_path / "proj", capture_output=True, text=True,
        timeout=120, env={"PATH": "/usr/bin:/bin", "HONE_WORKDIR": str(tmp_path / "work")},
    )  # fmt: skip
    assert bench.returncode == 0, bench.stderr
    assert bench.stdout.startswith("seconds: ")
    assert list((tmp_path / "work" / "hot_split").glob("*.gcda"))  # the PGO training run ran


@pytest.mark.parametrize("language", ["python", "java"])
def test_interpreted_hot_code_gets_no_compiler_flags_project(tmp_path: Path, language: str) -> None:
    """A CPU-bound Python or Java program: its hot code runs in the interpreter or the JIT, so
    a project that rebuilds "the program" with -O3 or PGO tunes nothing of it."""
    profile = Profile.from_folded({"app;main;spin": 95, "app;main;read": 5})
    threads = [ThreadStat(7, "app", 95, 90, 5, 5, 0, 0)]
    d = Diagnosis(profile, target="pid 7 (app)", pid=7, window_s=5, threads=threads,
                  language=language, findings=decide(profile, threads, 5, 2))  # fmt: skip
    assert d.findings[0].kind == "cpu"
    assert "compiler-flags" not in terminal(d)
    with pytest.raises(HoneError, match="suggests no knob"):
        suggest.write(d, tmp_path / "p")
    assert not (tmp_path / "p" / "flags.conf").exists()
    d.language = "native"  # the same profile of a compiled program does get one
    assert "compiler-flags" in terminal(d)
    assert "opt" in yaml.safe_load(suggest.write(d, tmp_path / "p").read_text())["knobs"]
