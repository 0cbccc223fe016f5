"""Work done by child processes: a command that runs its work in a child (a shell script, fio's
job processes, a server's workers) is not "mostly idle"; the verdict names the busy child."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from benchmarks.diagnose.inputs import build
from hone.diagnose import descendants
from hone.diagnose.report import Diagnosis


def test_descendants_follow_the_whole_tree() -> None:
    outer = subprocess.Popen(["sh", "-c", "sh -c 'sleep 30; true'; true"])
    try:
        deadline = time.monotonic() + 5
        names: list[str] = []
        # the inner shell's child is named sh from its fork until it execs sleep
        while time.monotonic() < deadline and names != ["sh", "sleep"]:
            table = descendants.processes()
            found = descendants.descendants(outer.pid, table)
            names = sorted(table[p][1] for p in found)
            time.sleep(0.05)
        assert names == ["sh", "sleep"]
        assert outer.pid not in found
    finally:
        subprocess.run(["pkill", "-P", str(outer.pid)], check=False)
        outer.kill()
        outer.wait()


@pytest.mark.slow
def test_a_command_whose_child_does_the_work(hone_cli, tmp_path: Path) -> None:
    hot = build("hot_split", tmp_path)
    done = hone_cli("diagnose", "-o", str(tmp_path / "rep"), "--", "sh", "-c", f"{hot} 3; true")
    assert done.returncode == 0, done.stderr
    d = Diagnosis.load(tmp_path / "rep" / "diagnosis.hone")
    top = d.findings[0]
    assert top.kind == "children", [f.headline for f in d.findings]
    assert "hot_split (pid " in top.headline and "--pid" in top.headline
    assert top.score > 0.2  # the child kept most of a CPU busy
    assert "Mostly idle" not in done.stdout
