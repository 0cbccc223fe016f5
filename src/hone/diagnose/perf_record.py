"""The start of every `perf record` command hone runs."""

from __future__ import annotations

from pathlib import Path

UNITS = {"B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def perf_record(*options: str, perf: str = "perf") -> list[str]:
    """`perf record` without BPF program events: at start-up perf reads the details of every
    loaded BPF program, which took 0.9 of its 1.15 s to record `true` on a Debian host with
    systemd's programs loaded, for samples in BPF code that no report of hone's names."""
    return [perf, "record", "--no-bpf-event", *options]


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
