"""Fixtures for tuning tests that change a real kernel setting."""

from __future__ import annotations

from pathlib import Path

import pytest

SWAPPINESS = Path("/proc/sys/vm/swappiness")


@pytest.fixture
def swappiness():
    """vm.swappiness as it was; put back after the test whatever happened."""
    original = SWAPPINESS.read_text()
    yield int(original)
    SWAPPINESS.write_text(original)
