"""Top-down and bottom-up tables, call trees and the one-line summary, on known profiles."""

from __future__ import annotations

from pathlib import Path

import pytest

from hone.diagnose.fold import Frame
from hone.diagnose.profile import Profile
from hone.diagnose.tables import (
    call_tree,
    caller_tree,
    components,
    format_table,
    format_tree,
    function_table,
    module_table,
    percent,
    summary,
)

FIXTURES = Path(__file__).parent / "fixtures"


def server() -> Profile:
    """A server whose time splits into log writing, RPC and the scheduler under a loop."""
    return Profile(
        stacks={
            (
                "srv",
                (
                    Frame("main", "/bin/srv"),
                    Frame("loop", "/bin/srv"),
                    Frame("log_write", "/bin/srv"),
                    Frame("fwrite", "/lib/libc.so.6"),
                    Frame("write", "/lib/libc.so.6"),
                ),
            ): 230,
            (
                "srv",
                (
                    Frame("main", "/bin/srv"),
                    Frame("loop", "/bin/srv"),
                    Frame("rpc_call", "/bin/srv"),
                    Frame("encode", "/bin/srv"),
                ),
            ): 100,
            (
                "srv",
                (
                    Frame("main", "/bin/srv"),
                    Frame("loop", "/bin/srv"),
                    Frame("rpc_call", "/bin/srv"),
                    Frame("send", "/lib/libc.so.6"),
                ),
            ): 78,
            (
                "srv",
                (
                    Frame("main", "/bin/srv"),
                    Frame("loop", "/bin/srv"),
                    Frame("schedule", "[kernel.kallsyms]"),
                ),
            ): 113,
            (
                "srv",
                (
                    Frame("main", "/bin/srv"),
                    Frame("loop", "/bin/srv"),
                    Frame("handle", "/bin/srv"),
                    Frame("recurse", "/bin/srv"),
                    Frame("recurse", "/bin/srv"),
                ),
            ): 479,
        }
    )


def test_function_table_self_and_total() -> None:
    rows = {row.name: row for row in function_table(server())}
    assert rows["main"].total_share == 1.0 and rows["main"].self_share == 0.0
    assert rows["rpc_call"].total_share == pytest.approx(0.178)
    assert rows["rpc_call"].self_share == 0.0
    assert rows["write"].self_share == pytest.approx(0.23)
    # Recursion counts a sample once in total.
    assert rows["recurse"].total_samples == 479 and rows["recurse"].self_samples == 479
    top_down = function_table(server())
    assert [r.name for r in top_down[:2]] == ["loop", "main"] or top_down[0].total_share == 1.0
    bottom_up = function_table(server(), order="self")
    assert bottom_up[0].name == "recurse"
    assert [r.name for r in bottom_up[1:3]] == ["write", "schedule"]


def test_module_table() -> None:
    rows = {row.name: row for row in module_table(server(), order="self")}
    assert rows["libc.so.6"].self_share == pytest.approx(0.308)
    assert rows["libc.so.6"].total_share == pytest.approx(0.308)
    assert rows["srv"].total_share == 1.0
    assert rows["srv"].self_share == pytest.approx(0.579)
    assert rows["[kernel.kallsyms]"].self_share == pytest.approx(0.113)


def test_trees() -> None:
    tree = call_tree(server())
    assert tree.total == 1000
    loop = tree.children[Frame("main", "/bin/srv")].children[Frame("loop", "/bin/srv")]
    assert loop.total == 1000 and loop.self == 0
    assert loop.children[Frame("rpc_call", "/bin/srv")].total == 178
    callers = caller_tree(server())
    write = callers.children[Frame("write", "/lib/libc.so.6")]
    assert write.total == 230
    assert list(write.children) == [Frame("fwrite", "/lib/libc.so.6")]
    text = format_tree(tree, min_share=0.15)
    assert "  17.8%    0.0%      rpc_call" in text
    assert "schedule" not in text  # 11.3 % is under the cut
    table = format_table(function_table(server(), order="self"), limit=3)
    assert table.splitlines()[1].split()[:3] == ["47.9", "47.9", "recurse"]


def test_summary_names_the_components() -> None:
    assert summary(server()) == ("handle 47.9 %, log_write 23 %, rpc_call 17.8 %, schedule 11.3 %")
    assert [n.frame.function for n in components(server(), limit=2)] == ["handle", "log_write"]
    assert percent(0.178) == "17.8 %" and percent(0.23) == "23 %"


def test_summary_of_a_recorded_program() -> None:
    profile = Profile.from_perf_script((FIXTURES / "hot_split.perf.txt").read_bytes())
    assert summary(profile) == "hot_work 71.4 %, cold_work 28.6 %"
    assert summary(Profile(stacks={})) == "no samples"


def test_summary_looks_through_module_named_frames_and_names_each_once() -> None:
    """perf names a frame without a symbol after its module (`[srv]`, as redis-server's
    stripped code showed): such a frame names nothing, and one function is one component."""
    srv, libc = "/usr/bin/srv", "/lib/libc.so.6"

    def stack(*names: str) -> tuple[str, tuple[Frame, ...]]:
        return ("srv", tuple(Frame(n, libc if n == "read" else srv) for n in names))

    parts = {("main", "work"): 60, ("main", "[srv]", "parse"): 20, ("main", "[srv]", "read"): 20}
    opaque = Profile(stacks={stack(*names): n for names, n in parts.items()})
    assert summary(opaque) == "work 60 %, parse 20 %, read 20 %"
    twice = Profile(stacks={stack("main", "a", "[srv]"): 50, stack("main", "b", "[srv]"): 50})
    assert summary(twice) == "[srv] 100 %"
