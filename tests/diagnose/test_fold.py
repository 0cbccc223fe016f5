"""Folding checked against recorded `perf script` fixtures whose folded answers came from inferno
(`inferno-collapse-perf [options] X.perf.txt`, already sorted) and were read through by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from hone.diagnose import fold
from hone.diagnose.fold import (
    FoldOptions,
    Frame,
    fold_perf_script,
    format_folded,
    is_kernel,
    parse_folded,
    parse_perf_script,
)

FIXTURES = Path(__file__).parent / "fixtures"

CASES = [
    ("hot_split", {}),
    ("system", {}),
    ("edge", {}),
    ("system.kernel-jit", {"annotate_kernel": True, "annotate_jit": True}),
    ("edge.tid-kernel-jit", {"include_tid": True, "annotate_kernel": True, "annotate_jit": True}),
    ("system.pid-addrs", {"include_pid": True, "include_addrs": True}),
]


def _input(case: str) -> bytes:
    return (FIXTURES / f"{case.split('.')[0]}.perf.txt").read_bytes()


@pytest.mark.parametrize(("case", "options"), CASES, ids=[c for c, _ in CASES])
def test_folding_matches_the_recorded_answer(case: str, options: dict) -> None:
    expected = (FIXTURES / f"{case}.folded").read_text()
    data = _input(case)
    assert format_folded(fold_perf_script(data, **options)) == expected
    # The fast path took it (no fallback) and the line-by-line reference agrees.
    opts = FoldOptions(**options)
    fast = fold._fold_blocks(data, opts)
    assert fast is not None
    assert fast == fold._fold_lines(data, opts)


def test_str_input_folds_like_bytes() -> None:
    data = _input("system")
    assert fold_perf_script(data.decode()) == fold_perf_script(data)


def test_edge_cases_by_hand() -> None:
    folded = fold_perf_script(_input("edge"))
    # Offsets stripped, argument lists cut (Go's .(*T) kept), ';' -> ':', a bad offset kept,
    # [unknown] named after its module, an empty symbol kept as ' ', kernel frames unmarked.
    assert (
        "V8_WorkerThread;[unknown]; ;[libc.so.6];weird:name+0xZZ;net/http.(*Client).Do;"
        "std::vector<int, std::allocator<int> >::push_back;nf_hook_slow;tcp_sendmsg;"
        "native_queued_spin_lock_slowpath"
    ) in folded
    # Java: the leading L of class names dropped, a->b inlining split and marked.
    assert (
        folded[
            "java;JavaMain;org/example/Loop:.run;org/example/Loop:.step_[i];Interpreter;"
            "org/example/Server:.handle"
        ]
        == 1000
    )
    # "(skipped)" frames dropped; the page-faults event is filtered out (cpu-clock came first);
    # a line that is no stack line is ignored.
    assert folded["server;_start;main"] == 1000
    assert folded["server;main"] == 1000
    # JIT frames with spaces in their names keep them; the argument list is cut at "(".
    assert (
        folded[
            "node;node::Start;Lcom/example/Foo:::bar ;Builtin: InterpreterEntryTrampoline;"
            "LazyCompile:~handle /app/server.js:10"
        ]
        == 1000
    )
    assert sum(folded.values()) == 6000


def test_event_filter_and_sample_counts() -> None:
    data = _input("edge")
    faults = fold_perf_script(data, event="page-faults")
    assert faults == {"server;main": 1000}
    samples = fold_perf_script(data, count="samples")
    assert sum(samples.values()) == 6
    # hot_split: 10101010 ns per cpu-clock sample at 99 Hz.
    periods = fold_perf_script(_input("hot_split"))
    counted = fold_perf_script(_input("hot_split"), count="samples")
    assert {k: v * 10101010 for k, v in counted.items()} == periods


def test_per_module_frames() -> None:
    stacks = parse_perf_script(_input("hot_split"), count="samples")
    (root, frames), _ = max(stacks.items(), key=lambda item: item[1])
    assert root == "hot_split"
    assert frames[-1].function == "hot_work"
    assert frames[-1].module.endswith("/hot_split")
    assert frames[0] == Frame("__libc_start_call_main", "/usr/lib/x86_64-linux-gnu/libc.so.6")


@pytest.mark.parametrize(
    "mangle",
    [
        lambda text: "# perf script header\n# more\n" + text,
        lambda text: text.replace("\n", "\r\n"),
        lambda text: text.replace("\n\n", "\n   \n"),
        lambda text: text.replace("\n\n", "\n\n\n\n"),
        lambda text: text.rstrip("\n"),
    ],
    ids=["comments", "crlf", "blank-with-spaces", "many-blank-lines", "no-final-newline"],
)
def test_unusual_layouts_fold_the_same(mangle) -> None:
    text = _input("system").decode()
    assert fold_perf_script(mangle(text)) == fold_perf_script(text)


def test_stack_on_the_event_line() -> None:
    text = (
        "false 64414 20110.539270:      34467 cycles:u:  ffffffff9aa3c8de [unknown] ([unknown])\n"
        "false 64414 20110.539271:      100 cycles:u:  ffffffff9aa3c8de f+0x1 ([kernel.kallsyms])\n"
        "\n"
        "vote   913    72.176760:     257597 cycles:uppp:\n"
        "\t4005d0 main+0x10 (/bin/vote)\n"
    )
    assert fold_perf_script(text) == {
        "false;[unknown]": 34467,
        "false;f": 100,
        "vote;main": 257597,
    }


def test_is_kernel() -> None:
    for module in ("[kernel.kallsyms]", "[nf_conntrack]", "x.ko", "/boot/vmlinux-6.1.0-13"):
        assert is_kernel(module)
    for module in ("[unknown]", "/usr/lib/libc.so.6", "vmlinux/", "/tmp/vmlinux x"):
        assert not is_kernel(module)


def test_parse_folded_round_trip_and_errors() -> None:
    folded = fold_perf_script(_input("system"))
    assert parse_folded(format_folded(folded)) == folded
    with pytest.raises(ValueError, match=r"x\.folded:2"):
        parse_folded("a;b 1\na;b\n", "x.folded")


def test_command_line_folds_like_the_library(tmp_path) -> None:
    import subprocess
    import sys

    source = FIXTURES / "edge.perf.txt"
    result = subprocess.run(
        [sys.executable, "-m", "hone.diagnose.fold", "--tid", "--kernel", "--jit", str(source)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout == (FIXTURES / "edge.tid-kernel-jit.folded").read_text()
