"""Node.js: V8 tells perf the names of its compiled JavaScript only when node starts with
`--perf-basic-prof-only-functions` (or `--perf-basic-prof`); it then writes /tmp/perf-PID.map,
which perf script reads, and with `--interpreted-frames-native-stack` the functions still
interpreted are named too. Without them every JavaScript frame is one anonymous
`[perf-PID.map]`. hone adds the flags to the commands it starts (NODE_OPTIONS reaches the node
processes a script starts as well): `-only-functions`, since `--perf-basic-prof` also has V8
write an `isolate-*-v8.log` into the working directory, and the stubs it maps besides are
nothing a person changes. A process it attaches to gets a note saying how to restart it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from hone.diagnose.fold import Frame

FLAGS = ("--perf-basic-prof-only-functions", "--interpreted-frames-native-stack")
#: Either writes the map (--perf-prof writes jitdump files instead).
_MAPPING = ("--perf-basic-prof", "--perf-basic-prof-only-functions")


def options(env: Mapping[str, str]) -> str:
    """NODE_OPTIONS with both flags, after whatever the user's environment already sets."""
    have = env.get("NODE_OPTIONS", "").split()
    return " ".join([*have, *(flag for flag in FLAGS if flag not in have)])


def unnamed_note(pid: int) -> str | None:
    """A note when the node process at `pid` writes no perf map (nothing to say when it does,
    or when /proc cannot tell)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    given = [arg.decode(errors="replace") for arg in argv]
    for entry in environ:
        if entry.startswith(b"NODE_OPTIONS="):
            given += entry.decode(errors="replace").partition("=")[2].split()
    if any(arg.split("=")[0] in _MAPPING for arg in given):
        return None
    return (
        "node without --perf-basic-prof-only-functions: its JavaScript frames are unnamed "
        f"([perf-PID.map]); start it with NODE_OPTIONS='{' '.join(FLAGS)}' (hone adds them to "
        "the commands it runs)"
    )


#: A V8 map entry: `JS:*burnPrimes /srv/app.js:1:20` (current V8: `*` optimised, `~` not yet,
#: `^` and `+` the tiers between), `LazyCompile:~handle /app/server.js:10` (node 16 and older).
_V8_NAME = re.compile(
    r"^(?:JS|LazyCompile|Function|Script|Eval):[*~^+]?(?P<name>\S*) (?P<source>\S.*?)(?::\d+)*$"
)


def script_frames(frames: tuple[Frame, ...]) -> tuple[Frame, ...]:
    """JavaScript frames named as people say them: the function, in its script (as Python's
    frames are): `burnPrimes` of `/srv/app.js`, line numbers dropped so that a function is one
    frame, `(anonymous)` for a function without a name. Other frames are left as they are."""
    if not any(_is_map(frame.module) for frame in frames):
        return frames
    return tuple(_script_frame(frame) if _is_map(frame.module) else frame for frame in frames)


def _script_frame(frame: Frame) -> Frame:
    named = _V8_NAME.match(frame.function)
    if not named:
        return frame
    return Frame(named["name"] or "(anonymous)", named["source"])


#: a JIT perf map's path, its process id
_MAP = re.compile(r"/tmp/perf-(\d+)\.map")


def map_pid(module: str) -> int | None:
    """The process whose JIT perf map `module` is (a frame perf named from it), else None."""
    found = _MAP.fullmatch(module)
    return int(found[1]) if found else None


def _is_map(module: str) -> bool:
    return map_pid(module) is not None
