"""Every example loads in both formats and describes the same knobs."""

from __future__ import annotations

from pathlib import Path

import pytest

from hone.project import load_project

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NAMES = ["compress", "memcached", "nginx", "redis", "postgresql", "gcc-flags"]


@pytest.mark.parametrize("name", NAMES)
def test_both_formats_load(name: str) -> None:
    hone = load_project(EXAMPLES / name)
    atune = load_project(EXAMPLES / "atune" / name)
    assert hone.name == atune.name == name
    assert (EXAMPLES / name / "README.md").is_file()
    kernel = [k for k in hone.knobs if k.actuator.kind in ("sysctl", "sysfs")]
    if name not in ("compress", "gcc-flags"):
        assert kernel, "every server example tunes at least one kernel knob"
        assert any(k.restart for k in hone.knobs), "and at least one knob needs a restart"
    assert len(atune.knobs) >= 3
