"""The capability probe on this machine, checked against the machine itself."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hone.diagnose import probe as probe_module
from hone.diagnose.probe import (
    Capabilities,
    Capability,
    cpu_identity,
    perf_stat_counts,
    probe,
    stack_depth_check,
    stat_failure,
)
from hone.diagnose.topdown import measure

FIXTURES = Path(__file__).parent / "fixtures"


def test_probe_reports_every_capability_with_evidence() -> None:
    caps = probe()
    names = {item.name for item in caps.items}
    for expected in (
        "perf", "software events", "hardware counters", "perf metric groups", "BTF", "kprobes",
        "tracepoint sched:sched_switch", "tracepoint lock:contention_begin", "jstack", "py-spy",
    ):  # fmt: skip
        assert expected in names
    assert all(item.detail for item in caps.items)
    assert caps.cpu_vendor in {"intel", "amd", "unknown"} or caps.cpu_vendor
    assert caps.has("perf") and caps.has("software events")


def test_probe_answers_match_the_machine() -> None:
    caps = probe()
    tracefs = Path("/sys/kernel/tracing/events")
    assert caps.has("tracepoint sched:sched_switch") == (tracefs / "sched/sched_switch").is_dir()
    assert caps.has("kprobes") == Path("/sys/bus/event_source/devices/kprobe").exists()
    assert caps.has("BTF") == Path("/sys/kernel/btf/vmlinux").exists()
    assert caps.has("jstack") == bool(shutil.which("jstack"))
    out = subprocess.run(
        ["perf", "stat", "-x,", "-e", "cycles", "--", "true"], capture_output=True, text=True
    ).stderr
    assert caps.has("hardware counters") == (perf_stat_counts(out).get("cycles") is not None)


def test_metric_groups_are_judged_by_output_not_exit_code() -> None:
    caps = probe()
    groups = caps.get("perf metric groups")
    assert groups is not None
    if not caps.has("hardware counters"):
        # perf exits 0 here and falls back to software events; hone must not believe it.
        assert not groups.available
        assert "exit code 0" in groups.detail


def test_capabilities_round_trip() -> None:
    caps = probe()
    again = Capabilities.from_dict(caps.to_dict())
    assert again == caps


def test_perf_stat_parsing_of_unsupported_counters() -> None:
    counts = perf_stat_counts((FIXTURES / "perf-stat-nocounters.csv").read_text())
    assert counts["cycles"] is None and counts["instructions"] is None
    assert counts["task-clock"] and counts["task-clock"] > 0


SYNTAX_ERROR = """event syntax error: 'cycles,uops_issued.any,uops_retired.retire_slots,idq_uop..'
                            \\___ parser error
Run 'perf list' for a list of valid events

 Usage: perf stat [<options>] [<command>]
"""


def test_why_perf_counted_nothing_is_said_in_words() -> None:
    nocounters = (FIXTURES / "perf-stat-nocounters.csv").read_text()
    assert stat_failure(nocounters) == "cycles, instructions not supported"
    assert stat_failure("<not counted>,,cycles:u,0,0.00,,\n") == "cycles not counted"
    assert stat_failure(SYNTAX_ERROR) == SYNTAX_ERROR.splitlines()[0]
    limited = "Error:\nAccess to performance monitoring and observability operations is limited.\n"
    assert stat_failure(limited) == limited.splitlines()[1]
    assert stat_failure("") == "no output"


def test_top_down_without_counters_is_one_readable_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    """It printed perf's CSV: `perf stat -e cycles,instructions: <not supported>,,cycles,0,...`."""
    out = (FIXTURES / "perf-stat-nocounters.csv").read_text()
    done = subprocess.CompletedProcess([], 0, "", out)
    monkeypatch.setattr(probe_module, "_run", lambda *args, **kwargs: done)
    caps = Capabilities()
    probe_module._probe_counters(caps)
    assert measure(1, 0.1, caps).evidence == (
        "no hardware counters: perf stat says cycles, instructions not supported, as on a virtual "
        "machine without a virtual PMU; TMAM needs the CPU's performance counters"
    )


def test_counters_that_count_are_said_so(monkeypatch: pytest.MonkeyPatch) -> None:
    done = subprocess.CompletedProcess([], 0, "", "1234567,,cycles,1000,100.00,,\n")
    monkeypatch.setattr(probe_module, "_run", lambda *args, **kwargs: done)
    caps = Capabilities()
    probe_module._probe_counters(caps)
    assert caps.get("hardware counters") == Capability(
        "hardware counters",
        True,
        "perf stat counted 1,234,567 cycles of `true`",
        "top-down (TMAM) analysis",
    )


def test_cpu_identity() -> None:
    text = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 97\n"
    text += "model name\t: AMD Ryzen 9 7950X\n\nprocessor\t: 1\nvendor_id\t: GenuineIntel\n"
    assert cpu_identity(text) == ("amd", 25, 97, "AMD Ryzen 9 7950X")


def test_stack_depth_check() -> None:
    assert stack_depth_check({"a;b;c;d": 90, "a": 10}).available
    shallow = stack_depth_check({"a;b": 80, "a;b;c": 20})
    assert not shallow.available and "frame-pointer" in shallow.detail


def test_probe_as_an_ordinary_user_explains_instead_of_failing() -> None:
    """tracefs is root-only: the probe says so (and still finds perf's software events)."""
    assert os.geteuid() == 0, "hone's tests run as root"
    code = (
        "import json; from hone.diagnose.probe import probe; "
        "print(json.dumps({i.name: [i.available, i.detail] for i in probe().items}))"
    )
    done = subprocess.run(
        ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
         sys.executable, "-c", code],
        capture_output=True, text=True, cwd="/tmp", timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    items = json.loads(done.stdout)
    available, detail = items["tracepoint sched:sched_switch"]
    assert not available and "permission" in detail
    assert items["software events"][0] and "uid 65534" in items["perf"][1]
