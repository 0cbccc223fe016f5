"""The start of every `perf record` command hone runs."""

from __future__ import annotations

from pathlib import Path

UNITS = {"B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def perf_record(*options: str, perf: str = "perf") -> list[str]:
    """`perf record` without BPF program events: at start-up perf reads the details of every
    loaded BPF program, which took 0.9 of its 1.15 s to record `true` on a Debian host with
    systemd's programs loaded, for samples in BPF code that no report of hone's names."""
    return [perf, "record", "--no-bpf-event", *options]


def reached(data: Path, max_size: str) -> bool:
    """perf stopped this recording at its `--max-size` (it then ends the session early, and the
    recording covers only the window's first part)."""
    limit = int(max_size[:-1]) * UNITS[max_size[-1].upper()]
    try:
        return data.stat().st_size >= limit
    except OSError:
        return False
