"""Every float option refuses `nan` and `inf`: they passed hone's `> 0` checks and ended in a
traceback (`round(nan)` in the collector) or a run that never ends."""

from __future__ import annotations

import pytest

ARGS = [
    ("analyze", "-d", "nan"),
    ("analyze", "-i", "inf"),
    ("analyze", "--min-confidence", "nan"),
    ("collect", "-i", "nan"),
    ("collect", "-d", "inf"),
    ("diagnose", "-d", "nan", "--", "true"),
    ("train", "-i", "inf", "x.csv"),
    ("worker", "x", "--storage", "sqlite://", "--lease", "nan"),
]


@pytest.mark.parametrize("args", ARGS, ids=" ".join)
def test_a_float_option_refuses_nan_and_inf(args: tuple[str, ...], hone_run) -> None:
    line = hone_run(*args).one_line()
    assert "is not a finite number" in line and line.startswith(f"hone: {args[0]}: ")
