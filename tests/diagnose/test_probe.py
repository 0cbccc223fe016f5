"""The capability probe on this machine, checked against the machine itself."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from hone.diagnose.probe import (
    Capabilities,
    cpu_identity,
    perf_stat_counts,
    probe,
    stack_depth_check,
)

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
