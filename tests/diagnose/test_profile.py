"""Profiles of real programs recorded with the real perf, and the .hone file format."""

from __future__ import annotations

import gzip
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from benchmarks.diagnose.inputs import build
from hone.diagnose.fold import Frame
from hone.diagnose.profile import Profile
from hone.diagnose.record import record
from hone.diagnose.tables import function_table
from hone.errors import HoneError

FIXTURES = Path(__file__).parent / "fixtures"


def _shares(profile: Profile) -> dict[str, tuple[float, float]]:
    return {row.name: (row.self_share, row.total_share) for row in function_table(profile)}


@pytest.mark.slow
def test_hot_function_share_of_a_real_program(tmp_path: Path) -> None:
    binary = build("hot_split", tmp_path)
    recording = record(command=[str(binary), "2"], output_dir=tmp_path, quiet_command=True)
    assert recording.perf_data.exists() and recording.perf_data.stat().st_size > 0
    profile = recording.profile()
    # 2 s of CPU at 99 Hz: about 200 samples (fewer would make the shares meaningless).
    assert profile.total >= 120, profile.total
    assert profile.event == "cpu-clock"
    assert set(profile.threads()) == {"hot_split"}
    shares = _shares(profile)
    # hot_work does 70 % of the loop iterations, cold_work 30 %; run_round calls both. Total
    # shares: on a busy machine the timer interrupt and preemption put kernel frames on top.
    assert shares["hot_work"][1] == pytest.approx(0.70, abs=0.12)
    assert shares["cold_work"][1] == pytest.approx(0.30, abs=0.12)
    assert shares["run_round"][1] >= 0.85
    assert shares["main"][1] >= 0.95
    hot_stack = max(profile.stacks.items(), key=lambda item: item[1])[0][1]
    assert [f.function for f in hot_stack[-3:]] == ["main", "run_round", "hot_work"]
    assert hot_stack[-1].module == str(binary)


@pytest.mark.slow
def test_profile_a_running_process_by_pid(start, tmp_path: Path) -> None:
    process = start([str(build("hot_split", tmp_path)), "30"], 0.2)
    # 3 s at 99 Hz: about 300 samples on a quiet machine, 50 when others take most of the CPU.
    profile = record(pid=process.pid, duration_s=3.0, output_dir=tmp_path).profile()
    assert profile.target == f"pid {process.pid}"
    assert profile.total >= 50, profile.total
    assert _shares(profile)["hot_work"][0] == pytest.approx(0.70, abs=0.17)


@pytest.mark.slow
def test_dwarf_call_graphs_find_callers_without_frame_pointers(tmp_path: Path) -> None:
    binary = build("hot_split", tmp_path, "-fomit-frame-pointer", output="hot_split_nofp")
    command = [str(binary), "1"]
    frame_pointers = record(command=command, output_dir=tmp_path / "fp").profile()
    dwarf = record(command=command, call_graph="dwarf", output_dir=tmp_path / "dwarf").profile()
    # Without frame pointers the walk loses the callers; perf's DWARF unwinding finds them.
    assert _shares(frame_pointers).get("run_round", (0, 0))[1] < 0.5
    assert _shares(dwarf)["run_round"][1] >= 0.85
    assert _shares(dwarf)["hot_work"][0] == pytest.approx(0.70, abs=0.17)


def test_record_refuses_bad_targets(tmp_path: Path) -> None:
    with pytest.raises(HoneError, match="no process"):
        record(pid=2**22 + 7, duration_s=1)
    with pytest.raises(HoneError, match="either"):
        record(pid=1, command=["true"])
    with pytest.raises(HoneError, match="either"):
        record()


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    text = (FIXTURES / "system.perf.txt").read_bytes()
    profile = Profile.from_perf_script(text, frequency_hz=49, duration_s=1.0, target="system")
    assert profile.event == "cpu-clock"
    assert profile.total == 98  # every sample of the recording
    path = profile.save(tmp_path / "run.hone")
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    loaded = Profile.load(path)
    assert loaded == profile
    assert loaded.folded() == profile.folded()


def test_a_save_cut_short_keeps_the_earlier_file(tmp_path: Path) -> None:
    """A diagnosis cannot be taken again: a save the kernel cuts short (a file size limit, as a
    full disk would) leaves the earlier file whole and nothing beside it."""
    path = tmp_path / "diagnosis.hone"
    earlier = Profile.from_perf_script((FIXTURES / "system.perf.txt").read_bytes())
    earlier.save(path)
    before = path.read_bytes()
    script = textwrap.dedent(f"""\
        import os, resource, signal, sys
        from hone.diagnose.fold import Frame
        from hone.diagnose.profile import Profile
        from hone.errors import HoneError
        stacks = {{("t", (Frame(os.urandom(16).hex(), "m"),)): 1 for _ in range(2000)}}
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails: EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        try:
            Profile(stacks=stacks).save({str(path)!r})
        except HoneError as exc:
            sys.exit(f"hone: {{exc}}")
        """)
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 1 and ran.stderr == f"hone: {path}: File too large\n", ran.stderr
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["diagnosis.hone"]


def test_profile_views() -> None:
    profile = Profile.from_folded({"a;main;work": 3, "a;main": 1, "b;main;work": 2})
    assert profile.total == 6
    assert profile.threads() == {"a": 4, "b": 2}
    assert profile.folded(threads=False) == {"main;work": 5, "main": 1}
    assert profile.stacks[("b", (Frame("main", ""), Frame("work", "")))] == 2


def test_load_folded_text_and_bad_files(tmp_path: Path) -> None:
    folded = tmp_path / "x.folded"
    folded.write_text("p;main;f 5\np;main 2\n")
    assert Profile.load(folded).total == 7
    bad = tmp_path / "bad.hone"
    bad.write_bytes(gzip.compress(b'{"format": "other"}'))
    with pytest.raises(HoneError, match=r"bad\.hone"):
        Profile.load(bad)
    truncated = tmp_path / "cut.hone"
    truncated.write_bytes(gzip.compress(b'{"format": "hone-profile", "version": 1')[:20])
    with pytest.raises(HoneError, match=r"cut\.hone"):
        Profile.load(truncated)
    with pytest.raises(HoneError, match="cannot read"):
        Profile.load(tmp_path / "missing.hone")
    garbage = tmp_path / "garbage.txt"
    garbage.write_text("not folded\n")
    with pytest.raises(HoneError, match=r"garbage\.txt:1"):
        Profile.load(garbage)


def test_inlined_frames_take_their_neighbours_module() -> None:
    text = (
        "nofp 20757  1908.361153:    3344481 cpu-clock:pppH: \n"
        "\t            11b6 hot_work+0x1e (/tmp/dg/nofp)\n"
        "\t           27249 __libc_start_call_main+0x79 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
        "\t           27304 __libc_start_main_impl+0x84 (inlined)\n"
        "\t            1090 _start+0x20 (/tmp/dg/nofp)\n"
    )
    ((_, frames),) = Profile.from_perf_script(text).stacks
    assert [f.module for f in frames] == [
        "/tmp/dg/nofp",
        "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "/tmp/dg/nofp",
    ]
    assert frames[1].function == "__libc_start_main_impl"
