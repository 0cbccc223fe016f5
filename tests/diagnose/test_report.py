"""A diagnosis saved as a .hone file (a profile plus a diagnosis section) and its HTML report."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from hone.diagnose import catalogue
from hone.diagnose.comparison import compare_html, compare_text
from hone.diagnose.fold import Frame
from hone.diagnose.jvmgc import Gc
from hone.diagnose.locks import Locks, LockWait
from hone.diagnose.offcpu import LatencySummary, OffCpu
from hone.diagnose.page import to_html
from hone.diagnose.pgwaits import UNRECORDED
from hone.diagnose.probe import Capabilities, Capability
from hone.diagnose.profile import Profile
from hone.diagnose.report import Diagnosis, terminal
from hone.diagnose.threads import ThreadStat
from hone.diagnose.topdown import Topdown
from hone.diagnose.verdict import decide


def make(cpu_share: int = 80) -> Diagnosis:
    profile = Profile.from_folded(
        {"app;main;hash_block": cpu_share, "app;main;read_input": 100 - cpu_share},
        target="pid 42 (app)",
    )
    threads = [
        ThreadStat(42, "app", 90, 85, 5, 5, 0, 5, "main-loop", ["hash_block"]),
        ThreadStat(43, "app", 1, 1, 0, 0, 0, 99),
    ]
    off = OffCpu(
        window_s=5,
        stacks={"sleep": {"app;main;wait_for_input;__schedule": 4.9e6}},
        per_thread={43: {"sleep": 4.9e6}},
        modules={"wait_for_input": "app"},
        runqueue=LatencySummary.of([10.0, 20.0, 300.0]),
    )
    locks = Locks(5, user=[LockWait("table_lock", "0x10", "mutex", 12.5, 4, 6.0, ["app"], "put")])
    caps = Capabilities("intel", 6, 167, "Xeon")
    caps.add(Capability("hardware counters", False, "<not supported> cycles", "TMAM"))
    caps.add(Capability("perf", True, "perf version 6.1", "sampling"))
    td = Topdown(False, evidence="<not supported> cycles; TMAM needs counters")
    td.software = {"on CPU": 45.5, "run queue": 2.5, "I/O wait": 0.0, "sleep": 52.0}
    findings = decide(profile, threads, 5, 2, off, locks, td)
    return Diagnosis(
        profile=profile, target="pid 42 (app)", pid=42, window_s=5, cpus=2, capabilities=caps,
        threads=threads, offcpu=off, locks=locks, topdown=td, findings=findings,
        suggestions=catalogue.knobs_for([f.kind for f in findings]), notes=["a note"],
    )  # fmt: skip


def test_round_trip_and_readable_as_a_profile(tmp_path: Path) -> None:
    d = make()
    d.language_profile = Profile(
        stacks={("hot", (Frame("run", "threading.py"), Frame("spin", "app.py"))): 7}, event="py-spy"
    )
    path = d.save(tmp_path / "run.hone")
    again = Diagnosis.load(path)
    assert again.runtime() == d.runtime()
    assert again.profile.folded() == d.profile.folded()
    assert again.language_profile is not None
    assert again.language_profile.stacks == d.language_profile.stacks
    # Anything that reads profiles reads a diagnosis.
    assert Profile.load(path).folded() == d.profile.folded()


def test_a_bare_profile_loads_as_a_diagnosis(tmp_path: Path) -> None:
    path = Profile.from_folded({"a;b": 3}).save(tmp_path / "p.hone")
    d = Diagnosis.load(path)
    assert d.profile.total == 3 and d.threads == [] and d.offcpu is None


def test_a_diagnosis_saved_before_processes_were_listed_loads(tmp_path: Path) -> None:
    """A file written before a diagnosis listed its processes and its threads named theirs
    (no `processes` key, threads without `pid` and `process`) loads as a one-process one."""
    path = make().save(tmp_path / "old.hone")
    document = json.loads(gzip.decompress(path.read_bytes()))
    del document["diagnosis"]["processes"]
    for thread in document["diagnosis"]["threads"]:
        del thread["pid"], thread["process"]
    path.write_bytes(gzip.compress(json.dumps(document).encode()))
    old = Diagnosis.load(path)
    assert old.processes == [] and [t.tid for t in old.threads] == [42, 43]
    assert old.threads[0].pid == 0 and old.threads[0].process == ""
    assert terminal(old).startswith("hone diagnose: pid 42 (app) for 5.0 s")
    assert "Hot threads" in to_html(old)


def test_hot_threads_of_several_processes_name_their_process() -> None:
    diagnosis = make()
    diagnosis.threads = [
        ThreadStat(2922, "nginx", 45, 20, 25, 1, 0, 54, pid=2922, process="pid 2922 (nginx: w)"),
        ThreadStat(2923, "nginx", 40, 20, 20, 1, 0, 59, pid=2923, process="pid 2923 (nginx: w)"),
    ]
    rows = [line for line in terminal(diagnosis).splitlines() if " nginx " in line]
    assert rows[0].endswith(" 54.0  pid 2922 (nginx: w)"), rows
    assert rows[1].endswith(" 59.0  pid 2923 (nginx: w)"), rows
    # one process: its threads' rows end with their figures
    one = [line for line in terminal(make()).splitlines() if line.startswith("       42 ")]
    assert one[0].endswith(" 5.0"), one


def test_html_is_self_contained_and_has_every_section() -> None:
    page = to_html(make())
    for title in ("Verdict", "Hot threads", "top-down and bottom-up", "Off-CPU", "Locks",
                  "TMAM", "What to tune", "Capabilities used and unavailable"):  # fmt: skip
        assert title in page
    assert "hash_block" in page and "main-loop" in page and "table_lock" in page
    assert "TMAM unavailable" in page and "not supported" in page
    assert page.count("<svg") == 2  # on-CPU and off-CPU flame graphs, inline
    # Self-contained: nothing fetched from elsewhere.
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "<link" not in page
    # Readable without colour: availability and states are words, not colours.
    assert ">NO<" in page and ">yes<" in page


def test_terminal_summary() -> None:
    diagnosis = make()
    long_name = "pool-worker-for-the-compression-stage-7"  # longer than any fixed column
    diagnosis.threads.append(ThreadStat(44, "app", 5, 5, 0, 0, 0, 95, long_name))
    text = terminal(diagnosis, Path("/r/report.html"))
    assert text.splitlines()[1].startswith("verdict: CPU-bound in function hash_block")
    assert "main-loop" in text and "software split" in text and "report: /r/report.html" in text
    rows = [line for line in text.splitlines() if line.strip().startswith(("42 ", "44 "))]
    assert long_name in rows[1]
    assert rows[0].index("90.0") + 4 == rows[1].index("5.0") + 3  # figures stay in columns


def test_terminal_says_when_postgresql_lock_waits_were_not_recorded() -> None:
    """A verdict without the backends' lock waits reads as if they had none: the terminal says
    that they are missing, and why."""
    diagnosis = make()
    diagnosis.notes.append(f"{UNRECORDED}perf record failed: No such process (tried 5 times)")
    lines = terminal(diagnosis).splitlines()
    assert lines[1] == f"note: {UNRECORDED}perf record failed: No such process (tried 5 times)"
    assert "note: a note" not in lines  # the other notes are in the report


def test_compare() -> None:
    before, after = make(80), make(30)
    text = compare_text(before, after)
    assert "hash_block -50 points (80 % -> 30 %)" in text
    assert "GC " not in text and "heap used" not in text  # neither is a JVM
    page = compare_html(before, after)
    assert "Differential flame graph" in page and "<svg" in page


def test_compare_with_one_jvm_sets_its_collector_beside_nothing() -> None:
    """A JVM diagnosed before, another runtime after: its GC figures against `-`; a JVM whose
    perf-data counters were not readable has the share of samples alone."""
    before, after = make(80), make(30)
    before.gc = Gc(gc_share=0.9, counters=True, collections={"G1 young": [400, 2.0],
                   "G1 full": [57, 1.3]}, pause_share=0.81, heap_used=62 << 20,
                   heap_max=64 << 20)  # fmt: skip
    text = compare_text(before, after)
    assert "GC % of on-CPU samples: 90.0 -> -" in text
    assert "GC collections: 457 (57 full), 91.4/s -> -" in text  # in make()'s 5 s window
    assert "GC pauses % of the window: 81.0 -> -" in text
    assert "heap used / max: 62 MB / 64 MB (97%) -> -" in text
    after.gc = Gc(gc_share=0.05)
    assert "GC collections: 457 (57 full), 91.4/s -> -" in compare_text(before, after)
    assert "GC % of on-CPU samples: 90.0 -> 5.0" in compare_text(before, after)


def test_a_window_under_a_second_is_given_in_hundredths() -> None:
    """`-d 0.05` recorded 0.074 s and the summary said `for 0.1 s`."""
    from hone.diagnose.report import span

    assert span(0.074) == "0.07" and span(0.5) == "0.50" and span(5.04) == "5.0"
