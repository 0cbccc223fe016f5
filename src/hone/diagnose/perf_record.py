"""The start of every `perf record` command hone runs."""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
from pathlib import Path

UNITS = {"B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def perf_record(*options: str, perf: str = "perf") -> list[str]:
    """`perf record` without BPF program events: at start-up perf reads the details of every
    loaded BPF program, which took 0.9 of its 1.15 s to record `true` on a Debian host with
    systemd's programs loaded, for samples in BPF code that no report of hone's names."""
    return [perf, "record", "--no-bpf-event", *options]


def timer(seconds: float) -> list[str]:
    """The `sleep` that bounds a recorder (`perf ... -- sleep N`), killed when its perf ends:
    perf stat leaves its `sleep` running when it is stopped, and so does a perf record that
    dies before it ends it (SIGKILL). setpriv (util-linux) asks the kernel for that, then
    execs sleep; without it, a plain sleep."""
    if shutil.which("setpriv") is None:
        return ["sleep", f"{seconds:g}"]
    return ["setpriv", "--pdeathsig", "KILL", "--", "sleep", f"{seconds:g}"]


_PR_SET_PDEATHSIG = 1
#: What a recorder gets when hone is gone: the SIGINT of a window's normal end, on which perf
#: writes its data, ends its `sleep` and exits, and py-spy writes its profile.
DEATH_SIGNAL = signal.SIGINT


def start_tied(argv: list[str], **popen: object) -> subprocess.Popen:
    """Popen a recorder that ends when hone does, SIGKILL included (SIGTERM and Ctrl-C stop the
    recorders in the window's clean-up; nothing runs in hone after a SIGKILL): a `perf record
    -a -- sleep N` left behind samples every CPU for the window's rest. The kernel sends
    DEATH_SIGNAL when the thread that started the recorder ends: each is started by the thread
    that waits for it. SIGPIPE is ignored: perf's last words go to a pipe whose reader is gone,
    and that signal killed it before it had written its data and ended its `sleep`. SIGINT is
    the default again: hone started in the background by a script inherits it ignored, and so
    did perf, which went on recording when the signal came before it had set its handler."""
    libc = ctypes.CDLL(None, use_errno=True)  # looked up before the fork, not in it
    prctl, ignore = libc.prctl, libc.signal
    parent = os.getpid()

    def tie() -> None:
        prctl(_PR_SET_PDEATHSIG, int(DEATH_SIGNAL), 0, 0, 0)
        ignore(int(signal.SIGPIPE), 1)  # SIG_IGN, kept across exec
        ignore(int(DEATH_SIGNAL), 0)  # SIG_DFL
        if os.getppid() != parent:  # hone ended before the request: nothing will signal
            os._exit(1)

    return subprocess.Popen(argv, preexec_fn=tie, **popen)  # type: ignore[call-overload]


def scratch_record() -> list[str]:
    """`perf record` of data that `perf script` reads at once and that is then deleted: without
    build IDs. Those let a later `perf report` find the very binaries recorded, but perf reads
    its whole file again to collect them after it is stopped: 0.6 s of 0.65 s from SIGINT to
    exit for a 2.5 s sched_switch recording of two contending threads on a loaded machine,
    while the diagnosis waits. Symbols come from the binaries' paths, as they are now."""
    return perf_record("--no-buildid")


def command_of(perf: int) -> int | None:
    """perf record's child once it runs its command, `sleep` (before the exec it is a copy of
    perf). perf has then enabled its events: it does so just before it lets the command exec,
    and after it has read the target's mappings."""
    try:
        kids = Path(f"/proc/{perf}/task/{perf}/children").read_text().split()
        if kids and Path(f"/proc/{kids[0]}/comm").read_text(errors="replace").strip() == "sleep":
            return int(kids[0])
    except OSError:
        pass
    return None


def enabled_outputs() -> set[str]:
    """The output files of this process's `perf record` and `perf stat -o` children (started
    from any of its threads) that have enabled their events."""
    outputs = set()
    for task in Path("/proc/self/task").iterdir():
        try:
            kids = (task / "children").read_text().split()
        except OSError:  # a thread that has ended
            continue
        for kid in kids:
            try:
                argv = Path(f"/proc/{kid}/cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            words = argv.split("\0")
            if words[1:2] in (["record"], ["stat"]) and "-o" in words and command_of(int(kid)):
                outputs.add(words[words.index("-o") + 1])
    return outputs


def finished(data: Path) -> bool:
    """perf wrote this recording to its end: the size of its data section, in the file's header
    (perf_file_header: magic, size, attr_size, attrs' offset and size, then data's), is 0 until
    perf ends normally, and `perf script` refuses such a file ("incompatible file format")."""
    try:
        with data.open("rb") as file:
            header = file.read(56)
    except OSError:
        return False
    return len(header) == 56 and header[:8] == b"PERFILE2" and header[48:56] != bytes(8)


def reached(data: Path, max_size: str) -> bool:
    """perf stopped this recording at its `--max-size` (it then ends the session early, and the
    recording covers only the window's first part)."""
    limit = int(max_size[:-1]) * UNITS[max_size[-1].upper()]
    try:
        return data.stat().st_size >= limit
    except OSError:
        return False
