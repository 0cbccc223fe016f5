"""A project hone writes stays YAML whatever its comments quote."""

from __future__ import annotations

import yaml

from hone.project.yamlio import dump_with_header


def test_a_quoted_multi_line_command_stays_in_its_comment() -> None:
    target = "pid 12 (python3 -c import time\nwhile time.monotonic() < end:  # a server: x)"
    data = {"name": "diagnose-python3", "knobs": {"a": {"type": "int", "range": [1, 2]}}}
    text = dump_with_header(["# Written by hone", f"# from the diagnosis of {target}."], data)
    assert yaml.safe_load(text) == data
    assert text.splitlines()[1].startswith("# from the diagnosis of pid 12 (python3 -c import")
