"""Processes too short for perf's samples: each followed process's event starts a full
sampling period when the process does, so a script's 5 ms commands leave (almost) no sample;
the CPU time perf writes as each ends (`perf record -s`) counts them, by program, all but the
one (per CPU) that ends holding perf's original events (hone.diagnose.exits says why)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from hone.diagnose import exits
from hone.diagnose.fold import Frame
from hone.diagnose.perf_record import perf_record
from hone.diagnose.profile import Profile

#: 40 awks of about 5 ms of CPU each: every one shorter than the 10.1 ms period of 99 Hz.
SCRIPT = 'for i in $(seq 40); do awk "BEGIN{for(i=0;i<200000;i++)s+=i}"; done'


def test_the_ended_processes_are_counted_though_the_samples_missed_them(tmp_path: Path) -> None:
    data = tmp_path / "perf.data"
    argv = [*perf_record(), "-F", "99", "-e", "cpu-clock", "-g", "-s", "-o", str(data)]
    subprocess.run([*argv, "--", "sh", "-c", SCRIPT], check=True, capture_output=True)
    script = subprocess.run(["perf", "script", "-i", str(data), "-F", "comm"],
                            capture_output=True, text=True, check=False).stdout  # fmt: skip
    gone = [e for e in exits.ended(data).values() if e.comm == "awk"]
    assert 40 - (os.cpu_count() or 1) <= len(gone) <= 40  # one lost per CPU at most
    assert all(0 < e.cpu_s < 0.05 for e in gone), gone
    cpu = sum(e.cpu_s for e in gone)
    assert 0.04 < cpu < 2
    # none sampled on a quiet machine; a busy one shortens the inherited period, rarely
    assert script.split().count("awk") < 99 * cpu / 4, script


def test_the_profile_holds_them_by_program_name() -> None:
    gone = [exits.Ended(10, "awk", 0.2), exits.Ended(11, "awk", 0.1), exits.Ended(12, "cc1", 0.05)]
    frame = Frame("main", "/usr/bin/cc1")
    profile = Profile({("sh-9", (Frame("wait4", "libc.so.6"),)): 3, ("cc1-12", (frame,)): 2},
                      frequency_hz=100)  # fmt: skip
    merged = exits.into_profile(profile, gone, {9: 3, 12: 2})
    assert merged.threads() == {"awk": 30, "sh-9": 3, "cc1": 5}  # 0.3 s at 100 Hz; 2 + 3 unsampled
    assert merged.stacks[("cc1", (frame,))] == 2
    rows = exits.thread_stats(gone, 0.5)
    named = [(r.name, r.cpu_pct) for r in rows]
    assert named == [("awk (2 processes)", 60), ("cc1 (1 process)", 10)]
