"""`kill -9` of `hone diagnose`: nothing runs in hone to stop its recorders, so each must end
with it by itself (hone.diagnose.perf_record.start_tied), the `sleep` that bounds each one too."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hone.diagnose import scratch
from hone.diagnose.perf_record import finished


def _stat(pid: int) -> tuple[str, str] | None:
    """(state, start time) of a process, None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(errors="replace").rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[0], fields[19]


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                kids += map(int, (task / "children").read_text().split())
    return kids


def _tree(pid: int) -> dict[int, str]:
    """Every descendant of `pid` (from any of its threads), with its start time."""
    found: dict[int, str] = {}
    todo = _children(pid)
    while todo:
        kid = todo.pop()
        stat = _stat(kid)
        if stat and kid not in found:
            found[kid] = stat[1]
            todo += _children(kid)
    return found


def _naming(folder: Path) -> dict[int, str]:
    """The processes whose command line names `folder` (every recorder writes under it)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if str(folder).encode() in (entry / "cmdline").read_bytes():
                    stat = _stat(int(entry.name))
                    if stat:
                        found[int(entry.name)] = stat[1]
    return found


def _window_sleep(pid: int) -> bool:
    """The on-CPU recorder's `sleep 30` (perf's child has exec'd it: perf records)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        return Path(f"/proc/{pid}/comm").read_text().strip() == "sleep" and argv[-2] == b"30"
    except (OSError, IndexError):
        return False


def _alive(seen: dict[int, str]) -> list[str]:
    left = []
    for pid, started in seen.items():
        stat = _stat(pid)
        if stat and stat[1] == started and stat[0] not in ("Z", "X"):
            with contextlib.suppress(OSError):
                left.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
    return left


@pytest.mark.parametrize(
    ("what", "when"), [("pid", "starting"), ("pid", "recording"), ("system", "recording")]
)
def test_kill_9_leaves_no_recorder(what: str, when: str, hone_home: Path, tmp_path: Path) -> None:
    """SIGKILL while the recorders start, or once they record: perf record (`-p` and `-a`),
    perf stat and their `sleep 80` had run on for the 30 s window (its 60 s bound for the
    others), `--system`'s `perf record -a` for its whole duration; each ends within a few
    seconds now, and the on-CPU perf still writes its data."""
    target = subprocess.Popen(["sleep", "60"])
    report = tmp_path / "report"
    source = ["--system"] if what == "system" else ["--pid", str(target.pid)]
    hone = subprocess.Popen(
        [sys.executable, "-m", "hone", "diagnose", *source, "-d", "30", "-o", str(report)],
        env={**os.environ, "HONE_HOME": str(hone_home), "TMPDIR": str(tmp_path)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    seen: dict[int, str] = {}
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            seen |= _tree(hone.pid)
            kids = [p for p in seen if _stat(p)]
            # recording: the on-CPU perf has enabled its events and runs its `sleep 30`
            if (when == "starting" and kids) or any(map(_window_sleep, kids)):
                break
            time.sleep(0.02)
        assert seen, "hone started no recorder"
        if when == "recording":
            time.sleep(0.5)
        seen |= _tree(hone.pid)
        hone.kill()
        hone.wait()
        gone = time.monotonic() + 5
        while time.monotonic() < gone:
            seen |= _naming(tmp_path)  # a recorder started as hone was killed
            for pid in list(seen):
                seen |= _tree(pid)
            if not _alive(seen):
                break
            time.sleep(0.05)
        left = _alive(seen)
    finally:
        target.kill()
        target.wait()
        for pid in seen:
            if _alive({pid: seen[pid]}):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    assert left == []
    if when == "recording":
        assert finished(report / "perf.data")


def test_the_next_diagnosis_removes_what_a_killed_one_left(
    hone_cli, hone_home: Path, tmp_path: Path
) -> None:
    """`kill -9` as the recorders record leaves the temporary folder (scheduler and lock
    recordings) and the report folder without its diagnosis.hone: the next diagnosis removes
    the first, whose owner is gone, and `hone diagnoses` lists the second as incomplete. A
    folder whose owner runs, one whose owner's pid now names a process started later, and one
    hone did not make are told apart."""
    target = subprocess.Popen(["sleep", "60"])
    env = {**os.environ, "HONE_HOME": str(hone_home), "TMPDIR": str(tmp_path)}
    live, foreign, reused = (tmp_path / f"hone-diagnose-{n}" for n in ("live", "x", "reused"))
    for folder in (live, foreign, reused):
        folder.mkdir()
    (live / scratch.OWNER).write_text(json.dumps(scratch.owner()))
    (reused / scratch.OWNER).write_text(json.dumps({**scratch.owner(), "start": 0}))
    seen: dict[int, str] = {}
    try:
        hone = subprocess.Popen(
            [sys.executable, "-m", "hone", "diagnose", "--pid", str(target.pid), "-d", "30"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(map(_window_sleep, seen)):
            seen |= _tree(hone.pid)
            time.sleep(0.02)
        assert seen, "hone started no recorder"
        hone.kill()
        hone.wait()
        (left,) = set(tmp_path.glob("hone-diagnose-*")) - {live, foreign, reused}
        assert scratch.read_owner(left)["pid"] == hone.pid  # type: ignore[index]
        (item,) = json.loads(hone_cli("diagnoses", "--json").stdout)
        assert item["incomplete"]["reason"].startswith(f"hone (pid {hone.pid}) ended before")
        assert "perf.data" in item["incomplete"]["files"]
        again = [sys.executable, "-m", "hone", "diagnose", "--pid", str(target.pid), "-d", "0.5",
                 "--no-offcpu", "--no-locks", "-o", str(tmp_path / "again")]  # fmt: skip
        done = subprocess.run(again, env=env, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
    finally:
        target.kill()
        target.wait()
        for pid, started in seen.items():
            if _alive({pid: started}):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    assert set(tmp_path.glob("hone-diagnose-*")) == {live, foreign}
