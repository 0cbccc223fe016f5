"""pprof's profile.proto (gzip-compressed), written by a small hand encoder: no protobuf needed.

The message layout is that of github.com/google/pprof/proto/profile.proto: every string goes
into `string_table` (entry 0 is ""), each module becomes a Mapping, each (function, module) a
Function and a Location, and each stack a Sample with its location ids leaf first and two
values, the sample count and the CPU time it stands for (count x the sampling period). The
thread name is a `thread` label, so `go tool pprof -tagfocus` can pick threads. A Go
program's frames carry their addresses and source lines besides (module golines), which
`go build -pgo` needs.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable

from hone.diagnose.fold import Frame
from hone.diagnose.golines import Line, Lookup
from hone.diagnose.profile import Profile


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _int(field: int, value: int) -> bytes:
    """A varint field (wire type 0); zero is the default and left out."""
    return _varint(field << 3) + _varint(value) if value else b""


def _bytes(field: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2): strings, messages, packed numbers."""
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _packed(field: int, values: list[int]) -> bytes:
    return _bytes(field, b"".join(_varint(v) for v in values)) if values else b""


class _Strings:
    def __init__(self) -> None:
        self.index: dict[str, int] = {"": 0}

    def __call__(self, text: str) -> int:
        return self.index.setdefault(text, len(self.index))


#: The source lines of a frame at an address perf printed, the frame's leaf or not: the code
#: address and its lines, innermost first (golines.Lookup), or None.
Lines = Callable[[Frame, int, bool], "tuple[int, list[Line]] | None"]


def main_module(profile: Profile) -> str | None:
    """The program's executable, which pprof takes the first Mapping for (`File:` in `go tool
    pprof`'s header, the web UI's title): the module of `main` (C's, Go's `main.main`), else
    the most sampled module that is a file and no shared library. Mappings in the order their
    frames were met made the kernel the main binary of most profiles (`File:
    [kernel.kallsyms]` for memcached). None when no module qualifies."""
    samples: dict[str, int] = {}
    for (_, frames), count in profile.stacks.items():
        for frame in set(frames):
            if frame.function in ("main", "main.main") and frame.module.startswith("/"):
                return frame.module
            samples[frame.module] = samples.get(frame.module, 0) + count
    programs = [
        module for module in samples
        if module.startswith("/") and ".so" not in module.rsplit("/", 1)[-1]
        and not module.rsplit("/", 1)[-1].startswith("perf-")
    ]  # fmt: skip
    return max(programs, key=lambda module: samples[module]) if programs else None


def to_pprof(profile: Profile, lines: Lines | None = None) -> bytes:
    """The profile as a gzip-compressed profile.proto message. When the profile has the
    addresses of its frames (`Profile.addresses`, a Go program's), a frame that `lines` (by
    default golines.Lookup: Go binaries' line tables) places is written as Go's own profiler
    writes it: a Location with its address and a Line per inlined call, each Function with its
    file and start line, by which `go build -pgo` finds the profile's call sites in the code.
    Every other frame is one Location and one Function of its name and module, as without."""
    if profile.addresses is not None and lines is None:
        lines = Lookup()
    strings = _Strings()
    period = round(1e9 / profile.frequency_hz) if profile.frequency_hz else 1
    main = main_module(profile)
    mappings: dict[str, int] = {main: 1} if main is not None else {}
    # by Frame, or by (module, address) for a placed frame -> id, mapping, address, lines
    locations: dict[object, tuple[int, int, int, list[tuple[int, int]]]] = {}
    # by Frame, or by (name, file, start line) -> id, name, file, start line
    functions: dict[object, tuple[int, str, str, int]] = {}

    def function(key: object, name: str, file: str, start: int = 0) -> int:
        if key not in functions:
            functions[key] = (len(functions) + 1, name, file, start)
        return functions[key][0]

    def location(frame: Frame, pc: int, leaf: bool) -> int:
        placed = lines(frame, pc, leaf) if lines and pc else None
        key = (frame.module, placed[0]) if placed else frame
        if key not in locations:
            if frame.module not in mappings:
                mappings[frame.module] = len(mappings) + 1
            calls = [(function(frame, frame.function, frame.module), 0)] if not placed else []
            for line in placed[1] if placed else ():
                named = (line.function, line.file, line.start_line)
                calls.append((function(named, *named), line.line))
            address = placed[0] if placed else 0
            locations[key] = (len(locations) + 1, mappings[frame.module], address, calls)
        return locations[key][0]

    body = bytearray()
    for kind, unit in (("samples", "count"), ("cpu", "nanoseconds")):
        body += _bytes(1, _int(1, strings(kind)) + _int(2, strings(unit)))
    thread_key = strings("thread")
    for (thread, frames), count in profile.stacks.items():
        if not frames or count <= 0:
            continue
        spread = (profile.addresses or {}).get((thread, frames)) or {(0,) * len(frames): count}
        label = _bytes(3, _int(1, thread_key) + _int(2, strings(thread)))
        for pcs, n in spread.items():
            last = len(frames) - 1
            # pprof lists the leaf first
            ids = [location(frames[i], pcs[i], i == last) for i in range(last, -1, -1)]
            body += _bytes(2, _packed(1, ids) + _packed(2, [n, n * period]) + label)
    for module, mapping_id in mappings.items():
        fields = _int(1, mapping_id) + _int(5, strings(module or "[unknown]")) + _int(7, 1)
        body += _bytes(3, fields)
    for location_id, mapping_id, address, calls in locations.values():
        fields = _int(1, location_id) + _int(2, mapping_id) + _int(3, address)
        for function_id, line in calls:  # Line: function_id, line
            fields += _bytes(4, _int(1, function_id) + _int(2, line))
        body += _bytes(4, fields)
    for function_id, name, file, start in functions.values():
        named = strings(name)
        fields = _int(1, function_id) + _int(2, named) + _int(3, named)
        fields += _int(4, strings(file)) if file else b""
        body += _bytes(5, fields + _int(5, start))
    # Strings last: every index above is final by now.
    for text in strings.index:
        body += _bytes(6, text.encode("utf-8"))
    body += _int(9, int(profile.created * 1e9))
    body += _int(10, int((profile.duration_s or 0) * 1e9))
    body += _bytes(11, _int(1, strings.index["cpu"]) + _int(2, strings.index["nanoseconds"]))
    body += _int(12, period)
    return gzip.compress(bytes(body))
