"""pprof's profile.proto (gzip-compressed), written by a small hand encoder: no protobuf needed.

The message layout is that of github.com/google/pprof/proto/profile.proto: every string goes
into `string_table` (entry 0 is ""), each module becomes a Mapping, each (function, module) a
Function and a Location, and each stack a Sample with its location ids leaf first and two
values, the sample count and the CPU time it stands for (count x the sampling period). The
thread name is a `thread` label, so `go tool pprof -tagfocus` can pick threads.
"""

from __future__ import annotations

import gzip

from hone.diagnose.fold import Frame
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


def to_pprof(profile: Profile) -> bytes:
    """The profile as a gzip-compressed profile.proto message."""
    strings = _Strings()
    period = round(1e9 / profile.frequency_hz) if profile.frequency_hz else 1
    mappings: dict[str, int] = {}
    locations: dict[Frame, int] = {}
    body = bytearray()
    for kind, unit in (("samples", "count"), ("cpu", "nanoseconds")):
        body += _bytes(1, _int(1, strings(kind)) + _int(2, strings(unit)))
    thread_key = strings("thread")
    for (thread, frames), count in profile.stacks.items():
        if not frames or count <= 0:
            continue
        ids = []
        for frame in reversed(frames):  # pprof lists the leaf first
            location = locations.get(frame)
            if location is None:
                location = locations[frame] = len(locations) + 1
                if frame.module not in mappings:
                    mappings[frame.module] = len(mappings) + 1
            ids.append(location)
        label = _bytes(3, _int(1, thread_key) + _int(2, strings(thread)))
        body += _bytes(2, _packed(1, ids) + _packed(2, [count, count * period]) + label)
    for module, mapping_id in mappings.items():
        fields = _int(1, mapping_id) + _int(5, strings(module or "[unknown]")) + _int(7, 1)
        body += _bytes(3, fields)
    for frame, location_id in locations.items():
        line = _bytes(4, _int(1, location_id))  # Line.function_id: function ids = location ids
        body += _bytes(4, _int(1, location_id) + _int(2, mappings[frame.module]) + line)
    for frame, function_id in locations.items():
        name = strings(frame.function)
        fields = _int(1, function_id) + _int(2, name) + _int(3, name)
        fields += _int(4, strings(frame.module)) if frame.module else b""
        body += _bytes(5, fields)
    # Strings last: every index above is final by now.
    for text in strings.index:
        body += _bytes(6, text.encode("utf-8"))
    body += _int(9, int(profile.created * 1e9))
    body += _int(10, int((profile.duration_s or 0) * 1e9))
    body += _bytes(11, _int(1, strings.index["cpu"]) + _int(2, strings.index["nanoseconds"]))
    body += _int(12, period)
    return gzip.compress(bytes(body))
