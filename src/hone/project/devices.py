"""Detect the disk and network device that A-Tune's `{disk}` and `{network}` placeholders name."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path


@cache
def device_environment() -> dict[str, str]:
    """HONE_DISK and HONE_NETWORK from the environment, else detected (first real device)."""
    return {
        "HONE_DISK": os.environ.get("HONE_DISK") or detect_disk(),
        "HONE_NETWORK": os.environ.get("HONE_NETWORK") or detect_network(),
    }


def detect_disk() -> str:
    """The first whole block device that is not virtual (loop, ram, zram, device-mapper)."""
    for entry in sorted(Path("/sys/block").glob("*")):
        if entry.name.startswith(("loop", "ram", "zram", "dm-", "sr")):
            continue
        return entry.name
    return ""


def detect_network() -> str:
    """The interface of the default route, else the first non-loopback interface."""
    try:
        for line in Path("/proc/net/route").read_text().splitlines()[1:]:
            fields = line.split()
            if len(fields) > 1 and fields[1] == "00000000":
                return fields[0]
    except OSError:
        pass
    for entry in sorted(Path("/sys/class/net").glob("*")):
        if entry.name != "lo":
            return entry.name
    return ""
