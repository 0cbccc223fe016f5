"""`hone diagnose` end to end: a real command with two threads on one mutex, --suggest-project
accepted by `hone check`, --compare, and bad input as one line."""

from __future__ import annotations

import contextlib
import json
import subprocess
from pathlib import Path

import pytest
import yaml

from benchmarks.diagnose.inputs import build
from hone.diagnose import scratch
from hone.diagnose.profile import Profile
from hone.diagnose.report import Diagnosis
from hone.diagnose.threads import ThreadStat
from hone.diagnose.verdict import decide


def make(share: int) -> Diagnosis:
    """A saved-diagnosis stand-in: a CPU-bound process with hash_block at `share` %."""
    profile = Profile.from_folded({"app;main;hash_block": share, "app;main;read": 100 - share})
    threads = [ThreadStat(7, "app", 95, 90, 5, 5, 0, 0)]
    findings = decide(profile, threads, 5, 2)
    return Diagnosis(profile, target="pid 7 (app)", pid=7, window_s=5, threads=threads,
                     findings=findings)  # fmt: skip


@pytest.fixture(scope="module")
def lock_contend(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build("lock_contend", tmp_path_factory.mktemp("bin"))


@pytest.mark.slow
def test_command_mode_report_and_project(hone_cli, lock_contend: Path, tmp_path: Path) -> None:
    # 2 s of contention; hone holds the command until every recorder has attached (perf takes
    # up to 1.4 s at a load of 10 on 2 CPUs), so the window sees its whole run.
    done = hone_cli(
        "diagnose", "-o", str(tmp_path / "rep"), "--suggest-project", str(tmp_path / "proj"),
        "--", str(lock_contend), "2",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "verdict: " in done.stdout
    assert "hot threads" in done.stdout
    page = (tmp_path / "rep" / "report.html").read_text()
    assert "counter_lock" in page and "work_under_lock" in page
    for name in ("perf.data", "oncpu.folded", "oncpu.svg", "oncpu.speedscope.json",
                 "oncpu.pb.gz", "offcpu.folded", "offcpu.svg"):  # fmt: skip
        assert (tmp_path / "rep" / name).stat().st_size > 0, name
    assert "work_under_lock" in (tmp_path / "rep" / "oncpu.folded").read_text()
    d = Diagnosis.load(tmp_path / "rep" / "diagnosis.hone")
    assert d.command == [str(lock_contend), "2"]
    assert d.locks and d.locks.contended()[0].lock == "counter_lock"
    # the command is held at its first instruction until the recorders have started, so its
    # 2 s clock starts in the window, which ends when it exits, not at a default (a SIGSTOP
    # sent after the exec let it run first: 0.11-1.99 s windows of a 3 s run beside 8 busy
    # loops)
    assert 2.0 <= d.window_s < 3.5
    assert {t.comm for t in d.threads} == {"lock_contend"} and len(d.threads) == 3
    assert any(f.kind == "lock" for f in d.findings) or d.findings[0].kind in ("cpu", "runqueue")
    assert d.capabilities.get("frame-pointer stacks") is not None
    used = {i.name for i in d.capabilities.items if i.used}
    assert {"perf", "tracepoint sched:sched_switch", "tracepoint syscalls:sys_enter_futex"} <= used
    assert "kprobes" not in used and "jstack" not in used
    assert "used: perf" in done.stdout
    # The project: hone check accepts it, and its benchmark (the timed command) runs.
    project = tmp_path / "proj" / "hone.yaml"
    check = hone_cli("check", str(project.parent))
    assert check.returncode == 0, check.stderr
    data = yaml.safe_load(project.read_text())
    assert data["knobs"] and data["metrics"]["elapsed_s"]["direction"] == "minimize"
    bench = subprocess.run(
        ["sh", "-c", data["benchmark"]["command"]], capture_output=True, text=True, timeout=60
    )
    assert bench.returncode == 0 and "elapsed_s: " in bench.stdout


def test_compare_cli(hone_cli, tmp_path: Path) -> None:
    make(80).save(tmp_path / "before.hone")
    (tmp_path / "after").mkdir()
    make(30).save(tmp_path / "after" / "diagnosis.hone")  # a report folder does too
    done = hone_cli(
        "diagnose", "--compare", str(tmp_path / "before.hone"), str(tmp_path / "after"),
        "-o", str(tmp_path / "cmp.html"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "hash_block -50 points (80 % -> 30 %)" in done.stdout
    assert "Differential flame graph" in (tmp_path / "cmp.html").read_text()


@pytest.mark.slow
def test_from_a_saved_diagnosis_writes_a_placeholder_project(hone_cli, tmp_path: Path) -> None:
    make(80).save(tmp_path / "run.hone")
    done = hone_cli(
        "diagnose", "--from", str(tmp_path / "run.hone"), "--suggest-project", str(tmp_path / "p")
    )
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "p" / "hone.yaml").read_text()
    assert "TODO" in text
    assert hone_cli("check", str(tmp_path / "p")).returncode == 0
    again = hone_cli(
        "diagnose", "--from", str(tmp_path / "run.hone"), "--suggest-project", str(tmp_path / "p")
    )
    assert again.returncode == 2 and "already exists" in again.stderr


def test_a_saved_diagnosis_as_json_reads_back(hone_cli, tmp_path: Path) -> None:
    """`--json` prints the document `GET /api/diagnoses/NAME` answers, with the report's path."""
    make(80).save(tmp_path / "run.hone")
    done = hone_cli(
        "diagnose", "--from", str(tmp_path / "run.hone"), "--json", "-o", str(tmp_path / "r.html")
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["functions"]["self"][0]["name"] == "hash_block"
    assert document["functions"]["self"][0]["self"] == pytest.approx(0.8)
    assert document["samples"] > 0 and "findings" in document and "summary" in document
    assert document["files"]["report"] == str(tmp_path / "r.html")


def test_the_saved_diagnoses_are_listed_newest_first(hone_cli, hone_home: Path) -> None:
    assert hone_cli("diagnoses").stdout.startswith("no saved diagnoses in ")
    assert json.loads(hone_cli("diagnoses", "--json").stdout) == []
    folder = hone_home / "diagnoses"
    for share, name in ((80, "20261101-090000-pid-7"), (60, "20261102-090000-pid-7")):
        (folder / name).mkdir(parents=True)
        make(share).save(folder / name / "diagnosis.hone")
    broken = folder / "20261103-090000-pid-8" / "diagnosis.hone"
    broken.parent.mkdir()
    broken.write_text("not a diagnosis")
    listed = json.loads(hone_cli("diagnoses", "--json").stdout)
    assert [d["name"] for d in listed] == [
        "20261103-090000-pid-8", "20261102-090000-pid-7", "20261101-090000-pid-7"
    ]  # fmt: skip
    assert listed[0]["error"] == "unreadable" and listed[0]["finding"] is None
    assert listed[1]["target"] == "pid 7 (app)" and listed[1]["window_s"] == 5
    headline = listed[2]["finding"]["headline"]
    assert "hash_block" in headline and "80%" in headline
    # for people: one row each, the verdict whole on one line however long
    text = hone_cli("diagnoses").stdout
    row = next(line for line in text.splitlines() if "20261101-090000-pid-7" in line)
    assert headline in row and "pid 7 (app)" in row and "5 s" in row
    assert "unreadable" in text


def test_folders_left_without_a_diagnosis_are_listed_as_incomplete(
    hone_cli, hone_home: Path
) -> None:
    """A folder whose diagnosis.hone was never written (its hone killed, or failing to save) is
    listed, with why and what it holds, in the JSON and on one whole line of the table piped;
    a comparison's folder (a report.html alone) is no diagnosis."""
    folder = hone_home / "diagnoses"
    me = scratch.owner()
    folders = {
        "20261101-090000-pid-7": {"pid": me["pid"], "start": -1, "boot": me["boot"]},  # reused
        "20261102-090000-pid-8": {**me, "error": "[Errno 28] No space left on device"},
        "20261103-090000-pid-9": me,  # this process records into it
        "20261104-090000-pid-10": None,  # no record of who made it
    }
    for name, owned in folders.items():
        (folder / name).mkdir(parents=True)
        (folder / name / "perf.data").write_bytes(bytes(3 << 20))
        if owned is not None:
            target = f"pid {name.rpartition('-')[2]} (app)"
            (folder / name / scratch.OWNER).write_text(json.dumps({**owned, "target": target}))
    (folder / "20261105-090000-compare-a-b").mkdir()
    (folder / "20261105-090000-compare-a-b" / "report.html").write_text("<html></html>")
    listed = json.loads(hone_cli("diagnoses", "--json").stdout)
    assert [d["name"] for d in listed] == list(reversed(folders))
    state = {d["name"]: d["incomplete"] for d in listed}
    assert all(d["finding"] is None and d["samples"] is None for d in listed)
    assert state["20261101-090000-pid-7"]["reason"].startswith(f"hone (pid {me['pid']}) ended")
    assert state["20261102-090000-pid-8"]["reason"] == (
        "saving failed: [Errno 28] No space left on device"
    )
    assert state["20261103-090000-pid-9"]["running"] is True
    assert "no record of the hone" in state["20261104-090000-pid-10"]["reason"]
    assert all(s["files"] == {"perf.data": 3 << 20} for s in state.values())
    assert listed[-1]["target"] == "pid 7 (app)"
    text = hone_cli("diagnoses").stdout
    for item in listed:
        row = next(line for line in text.splitlines() if item["name"] in line)
        assert item["error"] in row and item["error"].endswith("holds perf.data (3 MB)")
    assert "compare" not in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give one of --pid"),
        (("--pid", "999999999"), "no process with pid 999999999"),
        (("--from", "/nonexistent.hone"), "cannot read"),
        (("--pid", "1", "--duration", "0"), "--duration must be positive"),
        (("-F", "0", "--", "sleep", "5"), "--frequency must be positive, got 0"),
        (("--system", "--pid", "1"), "give one of --pid PID, --system,"),
        (("-a", "-d", "-1"), "--duration must be positive"),
        # a 0.02 s window was diagnosed: "Run queue saturated ... (80% of their runnable time)";
        # hone holds the command at its first instruction, so `true` ends in the window
        (("--", "true"), "true ended (exit code 0) 0.0"),
    ],
)
def test_bad_input_is_one_line(hone_cli, args: tuple[str, ...], message: str) -> None:
    done = hone_cli("diagnose", *args)
    assert done.returncode == 2
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


def test_command_is_held_before_its_first_instruction(hone_home: Path) -> None:
    # hone and the command on one CPU at one SCHED_FIFO priority: the command, once executed,
    # runs until it blocks before hone runs again. A SIGSTOP sent after Popen returned found
    # `true` done ("ended before perf could attach"); held by the kernel right after its
    # execve, it runs only when the window has begun.
    import os
    import sys

    done = subprocess.run(
        ["taskset", "-c", "0", "chrt", "-f", "1", sys.executable, "-m", "hone", "diagnose",
         "--", "true"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "HONE_HOME": str(hone_home)},
    )  # fmt: skip
    assert done.returncode == 2
    assert "true ended (exit code 0) 0.0" in done.stderr
    assert "s into the window, too soon to diagnose" in done.stderr


@pytest.mark.slow
def test_ctrl_c_stops_every_recorder_and_the_command(hone_home: Path, tmp_path: Path) -> None:
    import os
    import signal
    import sys
    import time

    target: list[str] = []  # the pid of `sleep 61.5`, once it runs

    def ours() -> list[str]:
        """The diagnosed command and the perf processes recording it."""
        listing = subprocess.run(["pgrep", "-af", "perf record|sleep 61.5"], capture_output=True,
                                 text=True).stdout.splitlines()  # fmt: skip
        for line in listing:
            if line.split(maxsplit=1)[1] == "sleep 61.5":
                target[:] = [line.split()[0]]
        if not target:
            return []
        marks = (f"-p {target[0]} ", f"pid == {target[0]} ")
        return [p for p in listing if p.startswith(f"{target[0]} ") or any(m in p for m in marks)]

    hone = subprocess.Popen(
        [sys.executable, "-m", "hone", "diagnose", "-o", str(tmp_path / "rep"), "--",
         "sleep", "61.5"],
        env={**os.environ, "HONE_HOME": str(hone_home)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # Ctrl-C as in a terminal, even where the test run was started in the background
        # (a shell's background job inherits SIGINT ignored, and Python then never sees it)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        # Four recorders (perf's workload child shows as `perf record` until it execs: >= 4).
        while len([p for p in ours() if "perf record" in p]) < 4 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len([p for p in ours() if "perf record" in p]) >= 4, "the recorders never started"
        hone.send_signal(signal.SIGINT)
        hone.communicate(timeout=60)  # each recorder gets up to 30 s before SIGTERM/SIGKILL
    finally:
        hone.kill()
        hone.wait()
    assert hone.returncode == 130
    gone = time.monotonic() + 1  # a second for the last of them to be reaped
    while ours() and time.monotonic() < gone:
        time.sleep(0.05)
    assert ours() == []


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM"])
def test_a_stopped_pid_diagnosis_leaves_no_recorder(how: str, hone_home: Path) -> None:
    """Ctrl-C or SIGTERM (`timeout`, `kill`) on `hone diagnose --pid N`: the on-CPU recorder,
    `perf record -p N -- sleep 30` in a session of its own, was left recording for the rest
    of its 30 s after hone had gone (SIGTERM also left the other recorders and the folder),
    holding hone's stdout open: a `| tee` waited for it. Each ends with hone now."""
    import os
    import signal
    import sys
    import time

    def ours() -> list[str]:  # every process that names this test's state folder
        listing = subprocess.run(["pgrep", "-af", str(hone_home)], capture_output=True,
                                 text=True).stdout.splitlines()  # fmt: skip
        return [line for line in listing if "pgrep" not in line]

    target = subprocess.Popen(["sleep", "60"])
    hone = subprocess.Popen(
        [sys.executable, "-m", "hone", "diagnose", "--pid", str(target.pid), "--duration", "30",
         "--no-offcpu", "--no-locks"],
        env={**os.environ, "HONE_HOME": str(hone_home)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not any("perf record" in p for p in ours()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert any("perf record" in p for p in ours()), "perf never started"
        hone.send_signal(getattr(signal, how))
        _, err = hone.communicate(timeout=20)  # perf held stdout: this waited 30 s
        gone = time.monotonic() + 1
        while ours() and time.monotonic() < gone:
            time.sleep(0.05)
        left = ours()
    finally:
        hone.kill()
        hone.wait()
        target.kill()
        target.wait()
        for line in ours():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(line.split()[0]), signal.SIGKILL)
    assert hone.returncode == (130 if how == "SIGINT" else 143), err
    assert left == []
    assert list((hone_home / "diagnoses").iterdir()) == []


def _under_sample_rate(limit: int, argv: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    """Run argv where /proc/sys/kernel/perf_event_max_sample_rate reads `limit` (a bind mount in
    a mount namespace of its own): perf then asks the kernel for what the file says."""
    import os
    import sys

    fake = tmp_path / "max_sample_rate"
    fake.write_text(f"{limit}\n")
    script = 'mount --bind "$0" /proc/sys/kernel/perf_event_max_sample_rate && exec "$@"'
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script, str(fake), sys.executable, "-m", "hone", *argv],
        capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip


@pytest.mark.slow
def test_a_sampling_rate_the_kernel_refuses_is_explained(
    start, tmp_path: Path, hone_home: Path
) -> None:
    """The kernel lowers kernel.perf_event_max_sample_rate while perf's interrupts take too long,
    also while perf opens a process's events: perf then gets EINVAL and says `Invalid event
    (cpu-clock) in per-thread mode, enable system wide with '-a'`. Here perf reads a limit far
    above the kernel's, so the kernel refuses -F 200000 every time. The failed diagnosis leaves
    no folder behind in hone's diagnoses."""
    program = start([str(build("hot_split", tmp_path)), "30"], 0.3)
    argv = ["diagnose", "-F", "200000", "-d", "2", "--pid", str(program.pid)]
    done = _under_sample_rate(100_000_000, argv, tmp_path)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    line = done.stderr
    assert "perf record failed at -F 200000: the kernel refused that sampling rate" in line
    assert "kernel.perf_event_max_sample_rate" in line and "use a lower -F" in line
    assert not list((hone_home / "diagnoses").iterdir())


@pytest.mark.slow
def test_a_sampling_rate_perf_lowers_is_the_one_recorded(start, tmp_path: Path) -> None:
    program = start([str(build("hot_split", tmp_path)), "30"], 0.3)
    argv = ["diagnose", "-F", "20000", "-d", "2", "--json", "--no-offcpu", "--no-locks",
            "--pid", str(program.pid), "-o", str(tmp_path / "rep")]  # fmt: skip
    done = _under_sample_rate(2000, argv, tmp_path)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["frequency_hz"] == 2000  # the period pprof's cpu/nanoseconds uses
    assert any("sampled at 2000 Hz, not -F 20000" in note for note in document["notes"])


def test_json_of_a_command_that_prints_is_json_alone(hone_cli, tmp_path: Path) -> None:
    """The command's own output went to hone's stdout ahead of the JSON: `--json -- ./prog`
    whose prog printed a number gave 'Extra data' to any JSON reader."""
    script = "echo printed-by-the-command; exec sleep 5"
    argv = ["diagnose", "--json", "-d", "1", "--no-offcpu", "--no-locks", "-o",
            str(tmp_path / "rep"), "--", "sh", "-c", script]  # fmt: skip
    done = hone_cli(*argv)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["command"][0] == "sh"
    assert "printed-by-the-command" in done.stderr


def _recorders(hone: int) -> list[int]:
    """The perf processes hone started (from any of its threads)."""
    kids = []
    for task in Path(f"/proc/{hone}/task").iterdir():
        with contextlib.suppress(OSError):
            kids += (task / "children").read_text().split()
    found = []
    for kid in kids:
        with contextlib.suppress(OSError):
            if Path(f"/proc/{kid}/comm").read_text().strip() == "perf":
                found.append(int(kid))
    return found


def test_a_pid_that_ends_within_the_window_is_said_in_one_line(start) -> None:
    """The window ends with the process; the summary said only `for 1.2 s` of the 10 asked.
    The process ends once every recorder of hone's has attached, however long hone took to
    start them: a `sleep 2` outlived hone's start only on a machine that was not busy."""
    import sys
    import time

    from hone.diagnose.perf_record import command_of

    program = start(["sleep", "600"], 0.0)
    hone = subprocess.Popen(
        [sys.executable, "-m", "hone", "diagnose", "--pid", str(program.pid), "-d", "60",
         "--no-locks"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and hone.poll() is None:
            perf = _recorders(hone.pid)
            if perf and all(command_of(p) for p in perf):  # each has enabled its events
                break
            time.sleep(0.05)
        time.sleep(1)  # the window starts once they all have (MIN_WINDOW is 0.1 s)
        program.terminate()
        out, err = hone.communicate(timeout=120)
    finally:
        hone.kill()
        hone.wait()
    assert hone.returncode == 0, err
    said = [line for line in out.splitlines() if line.startswith("note: ")]
    assert len(said) == 1 and said[0].startswith(f"note: pid {program.pid} ended ")
    assert said[0].endswith(" s into the 60 s window")


def test_a_pid_that_ends_before_the_window_is_said_to(hone_cli, start) -> None:
    """A process that ended while hone's recorders started (seconds on a busy machine) was told
    `pid N ended 0.00 s into the window`, when perf had found no process to attach to. Here it
    ends as soon as the first recorder names it, long before every recorder has attached."""
    import sys

    code = (
        "import os, sys, time\n"
        "me = f'-p\\0{os.getpid()}\\0'.encode()\n"
        "def named():\n"
        "    for p in os.listdir('/proc'):\n"
        "        try:\n"
        "            if p.isdigit() and me in open(f'/proc/{p}/cmdline', 'rb').read():\n"
        "                return True\n"
        "        except OSError:\n"
        "            pass\n"
        "print('ready', flush=True)\n"
        "while not named():\n"
        "    time.sleep(0.005)\n"
    )
    program = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert program.stdout is not None and program.stdout.readline() == "ready\n"
        done = hone_cli("diagnose", "--pid", str(program.pid), "-d", "10", "--no-locks")
    finally:
        program.kill()
        program.wait()
    assert done.returncode == 2
    assert done.stderr.startswith(f"hone: pid {program.pid} ended before perf could attach ("), (
        done.stderr
    )
    assert len(done.stderr.strip().splitlines()) == 1 and "into the window" not in done.stderr


def test_a_zombie_is_named_at_once(hone_cli) -> None:
    """perf cannot attach to a process that has exited: it said only `/bin/dmesg | grep -i perf
    may provide additional information`, after the recorders' start-up wait."""
    import sys
    import time

    code = "import subprocess, time\nc = subprocess.Popen(['true'])\nprint(c.pid, flush=True)\n"
    code += "time.sleep(60)"
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        zombie = int(parent.stdout.readline())  # type: ignore[union-attr]
        deadline = time.monotonic() + 10
        while Path(f"/proc/{zombie}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        done = hone_cli("diagnose", "--pid", str(zombie), "-d", "2")
    finally:
        parent.kill()
        parent.wait()
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"hone: pid {zombie} is a zombie: it has exited and its parent has not reaped it yet; "
        "nothing runs to diagnose"
    )


def test_perfs_reason_is_its_error_not_its_dmesg_hint() -> None:
    """perf ends an open failure with a hint to read dmesg; the line before is the reason."""
    from hone.diagnose.record import failure

    said = (
        "Error:\nThe sys_perf_event_open() syscall returned with 3 (No such process) for event "
        "(sched:sched_switch).\n/bin/dmesg | grep -i perf may provide additional information.\n"
        "'trace' not valid for unknown events. Ignoring.\n"
    )
    assert failure(said, 255, 0) == (
        "perf record failed: The sys_perf_event_open() syscall returned with 3 (No such process) "
        "for event (sched:sched_switch)"
    )
    assert failure("", 255, 99) == "perf record failed: exit code 255, nothing on stderr"


def test_a_command_that_fails_in_the_window_is_noted(hone_cli, tmp_path: Path) -> None:
    """A benchmark that crashed (or that the OOM killer ended) half-way through was diagnosed
    as if it had run to its end: the summary gave a verdict and nothing else, hone exited 0.
    And a daemon the command left running was said in the report only: the terminal did not
    say that a server was left serving."""
    import os
    import re
    import signal
    import sys
    import time

    from hone.diagnose.window import failure_of

    program = "import os, time\nt = time.time()\nwhile time.time() - t < 0.3: pass\n"
    program += "os.kill(os.getpid(), 9)"
    script = f"setsid -f sleep 37.5 >/dev/null 2>&1; exec {sys.executable} -c '{program}'"
    folder = tmp_path / "rep"
    started = time.monotonic()
    done = hone_cli("diagnose", "--no-offcpu", "--no-locks", "-d", "60", "-o", str(folder),
                    "--", "sh", "-c", script)  # fmt: skip
    # perf had followed the daemon's fork, and the on-CPU recorder ran on until the daemon ended
    # (37.5 s) or the 60 s passed; the run itself takes a few seconds (10 at a load of 10)
    took = time.monotonic() - started
    daemon = re.search(r"left a daemon running, pid (\d+) \(sleep 37.5\)", done.stdout)
    if daemon:
        os.kill(int(daemon[1]), signal.SIGKILL)
    assert done.returncode == 0, done.stderr
    assert took < 30, took
    note = "the command failed in the window: killed by SIGKILL"
    assert done.stdout.splitlines()[1] == f"note: {note}", done.stdout
    assert daemon and done.stdout.splitlines()[2].startswith("note: the command left a daemon")
    assert note in Diagnosis.load(folder / "diagnosis.hone").notes
    assert f"note: {note}" in hone_cli("diagnose", "--from", str(folder)).stdout
    assert failure_of(7) == "exit code 7" and failure_of(-15) == "killed by SIGTERM"


def _children(pid: int) -> list[int]:
    """The live (not zombie) children of process `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError, IndexError):
            fields = (entry / "stat").read_text(errors="replace").rsplit(")", 1)[1].split()
            if entry.name.isdigit() and int(fields[1]) == pid and fields[0] not in "ZX":
                found.append(int(entry.name))
    return found


def _cmdline(pid: int) -> str:
    """The process's command line, "" once it has ended."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
    except OSError:
        return ""


def test_sigterm_stops_every_recorder_and_the_command(hone_home: Path) -> None:
    """`kill`, `timeout`, a service manager or a cancelled CI job send SIGTERM: it ended hone at
    once, and its recorders (each perf in a session of its own) went on for the whole window,
    a `perf record -a` of `--system -d 1e300` orphaned to init for good, with the temporary
    folder and the run's folder left behind. It now unwinds as Ctrl-C does: exit code 143."""
    import os
    import signal
    import sys
    import time

    hone = subprocess.Popen(
        [sys.executable, "-m", "hone", "diagnose", "--", "sleep", "47.5"],
        env={**os.environ, "HONE_HOME": str(hone_home)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline, seen = time.monotonic() + 4, {}
        while len(seen) < 4 and time.monotonic() < deadline:  # the command and its recorders
            for pid in _children(hone.pid):
                seen.setdefault(pid, _cmdline(pid))
            time.sleep(0.05)
        assert len(seen) >= 4, seen
        hone.send_signal(signal.SIGTERM)
        _, err = hone.communicate(timeout=30)
    finally:
        hone.kill()
        hone.wait()
    assert hone.returncode == 143, err
    assert err.strip() == "hone: stopped by SIGTERM"
    gone = time.monotonic() + 1
    while any(_cmdline(pid) == line for pid, line in seen.items()) and time.monotonic() < gone:
        time.sleep(0.05)
    assert [line for pid, line in seen.items() if _cmdline(pid) == line] == []
    assert not any((hone_home / "diagnoses").glob("*"))


def test_a_stopped_process_is_said_to_be_stopped_not_asleep(start) -> None:
    """A server someone suspended (Ctrl-Z, SIGSTOP, a debugger) does not run: the diagnosis
    said 'Mostly idle: 1 thread slept 1.00 thread-seconds per second' and nothing else. The
    thread sampler sees it stopped, and the summary's second line says so."""
    import os
    import signal
    import time

    from hone.diagnose.report import terminal
    from hone.diagnose.threads import ThreadSampler
    from hone.diagnose.window import STOPPED

    program = start(["sleep", "30"], 0)
    os.kill(program.pid, signal.SIGSTOP)
    sampler = ThreadSampler([program.pid]).start()
    time.sleep(0.3)
    stats = sampler.stop()
    assert sampler.stopped_share(program.pid) == 1.0
    assert stats[0].sleep_pct > 90  # the shares still count it as sleep: the note says why
    d = make(50)
    d.pid, d.notes = program.pid, [STOPPED.format(pid=program.pid, share=1.0)]
    assert terminal(d).splitlines()[1] == (
        f"note: pid {program.pid} was stopped (state T: SIGSTOP, Ctrl-Z or a debugger) in 100% "
        "of the window's samples: it did not run then, and that time counts as sleep; SIGCONT "
        "continues it"
    )
