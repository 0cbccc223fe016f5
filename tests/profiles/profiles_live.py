"""What the profile tests touch on the live system, and how to read it back."""

from __future__ import annotations

from pathlib import Path

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "atune-corpus" / "profiles"
SWAPPINESS = Path("/proc/sys/vm/swappiness")
DIRTY = Path("/proc/sys/vm/dirty_background_ratio")
THP = Path("/sys/kernel/mm/transparent_hugepage/defrag")
LIMITS = Path("/etc/security/limits.conf")


def selected(path: Path) -> str:
    """The active word of a bracketed sysfs choice (`always [madvise] never`)."""
    text = path.read_text().strip()
    return text.split("[")[1].split("]")[0] if "[" in text else text


def read_live() -> tuple[str, str, str]:
    return SWAPPINESS.read_text(), DIRTY.read_text(), selected(THP)
