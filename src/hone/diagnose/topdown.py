"""Top-down microarchitecture analysis (TMAM) from raw `perf stat -x,` counts.

Level 1 splits the CPU's issue (Intel) or dispatch (AMD) slots into Frontend Bound, Bad
Speculation, Backend Bound and Retiring; every slot falls in exactly one class, so the four sum
to 100 %. Three ways to count them:
- Intel before Ice Lake: slots = 4 x cycles; Frontend = IDQ_UOPS_NOT_DELIVERED.CORE, Retiring =
  UOPS_RETIRED.RETIRE_SLOTS, Bad Speculation = UOPS_ISSUED.ANY - RETIRE_SLOTS + 4 x
  INT_MISC.RECOVERY_CYCLES, Backend = the rest.
- Intel Ice Lake and later: the `slots` and `topdown-*` events (perf metrics), each over slots.
- AMD Zen 4 (6 dispatch slots per cycle) and Zen 5 (8): slots = width x ls_not_halted_cyc,
  Frontend = de_no_dispatch_per_slot.no_ops_from_frontend, Backend = ...backend_stalls, SMT
  contention = ...smt_contention, Retiring = ex_ret_ops, Bad Speculation = de_src_op_disp.all -
  ex_ret_ops.
Without hardware counters the analysis is reported unavailable with perf's reason in words, and
a clearly labelled software split (on CPU, run queue, I/O, sleep) stands in for it."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hone.diagnose.perf_record import timer
from hone.diagnose.probe import Capabilities, perf_stat_counts, stat_failure

INTEL_LEGACY = [
    "cycles", "uops_issued.any", "uops_retired.retire_slots", "idq_uops_not_delivered.core",
    "int_misc.recovery_cycles", "idq_uops_not_delivered.cycles_0_uops_deliv.core",
    "br_misp_retired.all_branches", "machine_clears.count", "idq.ms_uops",
]  # fmt: skip
INTEL_METRICS = [
    "slots", "topdown-retiring", "topdown-bad-spec", "topdown-fe-bound", "topdown-be-bound",
    "topdown-heavy-ops", "topdown-br-mispredict", "topdown-fetch-lat", "topdown-mem-bound",
]  # fmt: skip
AMD_ZEN = [
    "ls_not_halted_cyc", "ex_ret_ops", "de_src_op_disp.all",
    "de_no_dispatch_per_slot.no_ops_from_frontend", "de_no_dispatch_per_slot.backend_stalls",
    "de_no_dispatch_per_slot.smt_contention", "ex_ret_brn_misp", "bp_redirects.resync",
    "ex_no_retire.load_not_complete", "ex_no_retire.not_complete", "ex_ret_ucode_ops",
    "cpu/de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x6/",
]  # fmt: skip
L1 = ("Frontend Bound", "Bad Speculation", "Backend Bound", "Retiring")


@dataclass
class Topdown:
    available: bool
    method: str = ""  # which formulas: intel-4wide, intel-perf-metrics, amd-zen4, amd-zen5
    level1: dict[str, float] = field(default_factory=dict)  # category -> % of slots
    level2: dict[str, dict[str, float]] = field(default_factory=dict)  # parent -> child -> %
    evidence: str = ""
    software: dict[str, float] = field(default_factory=dict)  # the fallback split, % of time

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Topdown:
        return cls(**data)


def normalise(counts: dict[str, float | None]) -> dict[str, float | None]:
    """Event names as perf's tables spell them (lower case)."""
    return {name.lower(): value for name, value in counts.items()}


def _pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole else 0.0


def _split(parent: float, share: float) -> tuple[float, float]:
    share = min(max(share, 0.0), 1.0)
    return parent * share, parent * (1 - share)


def _intel_legacy(c: dict[str, float]) -> Topdown:
    cycles = c.get("cycles") or c.get("cpu_clk_unhalted.thread") or 0.0
    slots = 4 * cycles
    fe = _pct(c["idq_uops_not_delivered.core"], slots)
    ret = _pct(c["uops_retired.retire_slots"], slots)
    bad = _pct(
        c["uops_issued.any"] - c["uops_retired.retire_slots"] + 4 * c["int_misc.recovery_cycles"],
        slots,
    )
    result = Topdown(True, "intel-4wide")
    result.level1 = _close(fe, bad, ret)
    level2: dict[str, dict[str, float]] = {}
    if "idq_uops_not_delivered.cycles_0_uops_deliv.core" in c:
        latency = min(fe, _pct(4 * c["idq_uops_not_delivered.cycles_0_uops_deliv.core"], slots))
        level2["Frontend Bound"] = {"Fetch Latency": latency, "Fetch Bandwidth": fe - latency}
    misp, clears = c.get("br_misp_retired.all_branches"), c.get("machine_clears.count")
    if misp is not None and clears is not None and misp + clears:
        mispredicts, machine = _split(result.level1["Bad Speculation"], misp / (misp + clears))
        level2["Bad Speculation"] = {"Branch Mispredicts": mispredicts, "Machine Clears": machine}
    if "idq.ms_uops" in c and c["uops_issued.any"]:
        heavy = (
            c["uops_retired.retire_slots"] / c["uops_issued.any"] * _pct(c["idq.ms_uops"], slots)
        )
        heavy = min(heavy, ret)
        level2["Retiring"] = {"Heavy Operations": heavy, "Light Operations": ret - heavy}
    result.level2 = level2
    return result


def _intel_metrics(c: dict[str, float]) -> Topdown:
    slots = c["slots"]
    result = Topdown(True, "intel-perf-metrics")
    fe, bad = _pct(c["topdown-fe-bound"], slots), _pct(c["topdown-bad-spec"], slots)
    ret, be = _pct(c["topdown-retiring"], slots), _pct(c["topdown-be-bound"], slots)
    total = fe + bad + ret + be  # the four partition the slots; rescale rounding in perf's counts
    result.level1 = {k: 100 * v / total for k, v in zip(L1, (fe, bad, be, ret), strict=True)}
    pairs = {
        "Frontend Bound": ("topdown-fetch-lat", "Fetch Latency", "Fetch Bandwidth"),
        "Bad Speculation": ("topdown-br-mispredict", "Branch Mispredicts", "Machine Clears"),
        "Backend Bound": ("topdown-mem-bound", "Memory Bound", "Core Bound"),
        "Retiring": ("topdown-heavy-ops", "Heavy Operations", "Light Operations"),
    }
    for parent, (event, first, rest) in pairs.items():
        if c.get(event) is not None:
            part = min(100 * _pct(c[event], slots) / total, result.level1[parent])
            result.level2[parent] = {first: part, rest: result.level1[parent] - part}
    return result


def _amd(c: dict[str, float], width: int) -> Topdown:
    slots = width * c["ls_not_halted_cyc"]
    ret = _pct(c["ex_ret_ops"], slots)
    result = Topdown(True, f"amd-zen{4 if width == 6 else 5}")
    fe = _pct(c["de_no_dispatch_per_slot.no_ops_from_frontend"], slots)
    be = _pct(c["de_no_dispatch_per_slot.backend_stalls"], slots)
    bad = _pct(c["de_src_op_disp.all"] - c["ex_ret_ops"], slots)
    smt = _pct(c.get("de_no_dispatch_per_slot.smt_contention") or 0.0, slots)
    result.level1 = dict(zip(L1, (fe, bad, be, ret), strict=True))
    if smt:
        result.level1["SMT Contention"] = smt
    level2: dict[str, dict[str, float]] = {}
    latency_event = "cpu/de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x6/"
    if c.get(latency_event) is not None:
        latency = min(fe, _pct(width * c[latency_event], slots))
        level2["Frontend Bound"] = {"Fetch Latency": latency, "Fetch Bandwidth": fe - latency}
    misp, resync = c.get("ex_ret_brn_misp"), c.get("bp_redirects.resync")
    if misp is not None and resync is not None and misp + resync:
        mispredicts, restarts = _split(bad, misp / (misp + resync))
        level2["Bad Speculation"] = {
            "Branch Mispredicts": mispredicts,
            "Pipeline Restarts": restarts,
        }
    loads, stalls = c.get("ex_no_retire.load_not_complete"), c.get("ex_no_retire.not_complete")
    if loads is not None and stalls:
        memory, core = _split(be, loads / stalls)
        level2["Backend Bound"] = {"Memory Bound": memory, "Core Bound": core}
    if c.get("ex_ret_ucode_ops") is not None and c["ex_ret_ops"]:
        microcode, fastpath = _split(ret, c["ex_ret_ucode_ops"] / c["ex_ret_ops"])
        level2["Retiring"] = {"Microcode": microcode, "Fastpath": fastpath}
    result.level2 = level2
    return result


def _close(fe: float, bad: float, ret: float) -> dict[str, float]:
    """Backend Bound is the remainder, so level 1 sums to 100 by construction."""
    return dict(zip(L1, (fe, bad, 100.0 - fe - bad - ret, ret), strict=True))


def compute(counts: dict[str, float | None], cpu_family: int = 0) -> Topdown:
    """Level 1 and 2 from whichever complete event set the counts hold."""
    c = normalise(counts)
    missing = sorted(k for k, v in c.items() if v is None)
    have = {k: v for k, v in c.items() if v is not None}
    if all(k in have for k in INTEL_METRICS[:5]):
        result = _intel_metrics(have)
    elif all(k in have for k in INTEL_LEGACY[1:5]) and (
        "cycles" in have or "cpu_clk_unhalted.thread" in have
    ):
        result = _intel_legacy(have)
    elif all(k in have for k in AMD_ZEN[:5]):
        result = _amd(have, 8 if cpu_family >= 0x1A else 6)
    else:
        shown = ", ".join(missing[:6]) or "none of the top-down event sets"
        return Topdown(False, evidence=f"perf could not count: {shown}")
    result.level1 = {k: round(v, 3) for k, v in result.level1.items()}
    result.level2 = {
        p: {k: round(v, 3) for k, v in kids.items()} for p, kids in result.level2.items()
    }
    result.evidence = f"{len(have)} events counted ({result.method})"
    return result


def candidates(caps: Capabilities) -> list[str]:
    """`perf stat -e` arguments to try on this CPU, fullest first (level 2, then level 1 only).

    Intel's topdown-* events count only in a group led by `slots`; the level-2 ones exist from
    Sapphire Rapids on, so a group with them fails on Ice Lake and the level-1 group is next."""
    if caps.cpu_vendor == "amd":
        return [",".join(AMD_ZEN), ",".join(AMD_ZEN[:6])]
    if caps.cpu_vendor == "intel" and _has_perf_metrics():
        return ["{" + ",".join(INTEL_METRICS) + "}", "{" + ",".join(INTEL_METRICS[:5]) + "}"]
    return [",".join(INTEL_LEGACY), ",".join(INTEL_LEGACY[:5])]


def _has_perf_metrics() -> bool:
    return Path("/sys/bus/event_source/devices/cpu/events/topdown-retiring").exists()


def _stat(events: str, tail: list[str], run: Callable[..., subprocess.CompletedProcess]):
    done = run(["perf", "stat", "-x,", "-e", events, *tail], capture_output=True, text=True)
    return perf_stat_counts(done.stderr), done.stderr


def measure(
    pids: list[int],
    duration: float,
    caps: Capabilities,
    run: Callable[..., subprocess.CompletedProcess] = subprocess.run,
) -> Topdown:
    """Count the events on these processes for `duration` seconds, or say why not.

    Each candidate event set is tried on `true` first (a tenth of a second): perf's exit code
    says little, so a set is usable when perf printed a count for every level-1 event. `run`
    starts the window's `perf stat` (the caller's, to be able to stop it early)."""
    counters = caps.get("hardware counters")
    if not counters or not counters.available:
        return Topdown(
            False,
            evidence=(counters.detail if counters else "perf is not available")
            + "; TMAM needs the CPU's performance counters",
        )
    tried = []
    for events in candidates(caps):
        trial, text = _stat(events, ["--", "true"], subprocess.run)
        if compute(trial, caps.cpu_family).available:
            listed = ",".join(map(str, pids))
            counts, text = _stat(events, ["-p", listed, "--", *timer(duration)], run)
            result = compute(counts, caps.cpu_family)
            if not result.available:
                result.evidence = f"perf stat during the window: {stat_failure(text)}"
            return result
        tried.append(stat_failure(text))
    said = "; ".join(dict.fromkeys(tried))  # the fuller set and the level-1 set often fail alike
    return Topdown(False, evidence=f"no top-down event set counts here: {said}")


def software_split(threads: list) -> dict[str, float]:
    """Where the working threads' time went (software signals, not TMAM): % of their time.

    Working threads are those on a CPU, in the run queue or in I/O for at least 1 % of the
    window; threads asleep throughout (idle pools) would otherwise drown the picture."""
    working = [t for t in threads if t.cpu_pct + t.runq_pct + t.io_pct >= 1.0] or threads
    totals = {"on CPU": 0.0, "run queue": 0.0, "I/O wait": 0.0, "sleep": 0.0}
    for t in working:
        totals["on CPU"] += t.cpu_pct
        totals["run queue"] += t.runq_pct
        totals["I/O wait"] += t.io_pct
        totals["sleep"] += t.sleep_pct
    whole = sum(totals.values())
    return {k: round(100 * v / whole, 2) if whole else 0.0 for k, v in totals.items()}
