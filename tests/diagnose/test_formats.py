"""speedscope JSON validated against speedscope's own schema (vendored from its npm package), and
pprof output read back by the real `go tool pprof` and by a minimal protobuf decoder."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from hone.diagnose.golines import uvarint
from hone.diagnose.pprof import to_pprof
from hone.diagnose.profile import Profile
from hone.diagnose.speedscope import speedscope_json, to_speedscope

FIXTURES = Path(__file__).parent / "fixtures"
SCHEMA = json.loads((FIXTURES / "speedscope" / "file-format-schema.json").read_text())


def system_profile() -> Profile:
    text = (FIXTURES / "system.perf.txt").read_bytes()
    return Profile.from_perf_script(text, frequency_hz=49, duration_s=1.0, target="system")


def test_speedscope_is_valid_and_complete() -> None:
    profile = system_profile()
    document = json.loads(speedscope_json(profile))
    jsonschema.validate(document, SCHEMA)
    frames = document["shared"]["frames"]
    folded: dict[str, int] = {}
    for thread in document["profiles"]:
        assert thread["type"] == "sampled"
        assert thread["endValue"] == sum(thread["weights"])
        for stack, weight in zip(thread["samples"], thread["weights"], strict=True):
            key = ";".join([thread["name"], *(frames[i]["name"] for i in stack)])
            folded[key] = folded.get(key, 0) + weight
    assert folded == profile.folded()
    assert document["profiles"][0]["name"] == "python"  # the busiest thread first
    assert any(f.get("file") == "[kernel.kallsyms]" for f in frames)


def test_schema_rejects_a_broken_document() -> None:
    document = to_speedscope(system_profile())
    del document["profiles"][0]["weights"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, SCHEMA)


# ---- pprof ---------------------------------------------------------------------------------


def decode(data: bytes) -> list[tuple[int, int | bytes]]:
    """One protobuf message -> [(field number, varint or bytes)]."""
    fields = []
    at = 0

    def varint() -> int:
        nonlocal at
        value, at = uvarint(data, at)
        return value

    while at < len(data):
        key = varint()
        if key & 7 == 0:
            fields.append((key >> 3, varint()))
        elif key & 7 == 2:
            size = varint()
            fields.append((key >> 3, data[at : at + size]))
            at += size
        else:
            raise AssertionError(f"unexpected wire type {key & 7}")
    return fields


def _varints(data: bytes) -> list[int]:
    values, value, shift = [], 0, 0
    for byte in data:
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            values.append(value)
            value = shift = 0
    return values


def test_pprof_decodes_to_the_same_stacks() -> None:
    profile = system_profile()
    message = decode(gzip.decompress(to_pprof(profile)))
    strings = [value.decode() for field, value in message if field == 6]
    assert strings[0] == ""
    functions = {}
    for field, value in message:
        if field == 5:
            parts = dict(decode(value))
            functions[parts[1]] = strings[parts[2]]
    locations = {}
    for field, value in message:
        if field == 4:
            parts = decode(value)
            location_id = dict(parts)[1]
            line = dict(decode(dict(parts)[4]))
            locations[location_id] = functions[line[1]]
    folded: dict[str, int] = {}
    period = round(1e9 / 49)
    for field, value in message:
        if field != 2:
            continue
        parts = decode(value)
        ids = _varints(dict(parts)[1])
        count, cpu = _varints(dict(parts)[2])
        assert cpu == count * period
        label = dict(decode(dict(parts)[3]))
        assert strings[label[1]] == "thread"
        key = ";".join([strings[label[2]], *(locations[i] for i in reversed(ids))])
        folded[key] = folded.get(key, 0) + count
    assert folded == profile.folded()
    assert dict(message)[12] == period


def go_binary() -> str:
    """Debian's Go first: it ships `pprof` built, where a newer Go builds it on first use."""
    debian = "/usr/lib/go/bin/go"
    found = debian if os.path.exists(debian) else shutil.which("go")
    assert found, "go is installed by deps/apt-diagnose-profile.txt (golang-go)"
    return found


@pytest.mark.slow
def test_go_tool_pprof_reads_it(tmp_path: Path) -> None:
    """The real reader, `go tool pprof`."""
    profile = system_profile()
    path = tmp_path / "cpu.pb.gz"
    path.write_bytes(to_pprof(profile))
    result = subprocess.run(
        [go_binary(), "tool", "pprof", "-raw", str(path)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    raw = result.stdout
    locations = {}
    section = ""
    samples: list[tuple[int, list[int], str]] = []
    for line in raw.splitlines():
        if line in ("Samples:", "Locations", "Mappings"):
            section = line
            continue
        if section == "Samples:" and ":" in line and line.strip()[0].isdigit():
            counts, ids = line.split(":", 1)
            samples.append((int(counts.split()[0]), [int(i) for i in ids.split()], ""))
        elif section == "Samples:" and "thread:[" in line:
            count, ids, _ = samples[-1]
            samples[-1] = (count, ids, line.split("thread:[", 1)[1].rstrip("]"))
        elif section == "Locations" and ": 0x" in line:
            number, rest = line.split(":", 1)
            # "0x0 M=1 name module:0:0 s=0"; names may hold spaces, the module never does here.
            fields = rest.split()
            locations[int(number)] = " ".join(fields[2:-2])
    folded: dict[str, int] = {}
    for count, ids, thread in samples:
        key = ";".join([thread, *(locations[i] for i in reversed(ids))])
        folded[key] = folded.get(key, 0) + count
    assert folded == profile.folded()
    assert "PeriodType: cpu nanoseconds" in raw


def test_pprofs_first_mapping_is_the_program() -> None:
    """pprof takes the first Mapping for the main binary (`File:` in go tool pprof's header):
    mappings in the order their frames came made it the kernel, `File: [kernel.kallsyms]` for a
    memcached diagnosis."""
    from hone.diagnose.fold import Frame

    kernel, libc = "[kernel.kallsyms]", "/usr/lib/x86_64-linux-gnu/libc.so.6"
    profile = Profile(stacks={
        ("mc-worker", (Frame("start_thread", libc), Frame("[memcached]", "/usr/bin/memcached"),
                       Frame("__sys_sendmsg", kernel))): 5,
        ("memcached", (Frame("__libc_start_call_main", libc), Frame("main", "/usr/bin/memcached"),
                       Frame("epoll_wait", libc))): 1,
    })  # fmt: skip
    message = decode(gzip.decompress(to_pprof(profile)))
    strings = [value.decode() for field, value in message if field == 6]
    mappings = {dict(decode(v))[1]: strings[dict(decode(v))[5]] for f, v in message if f == 3}
    assert mappings[1] == "/usr/bin/memcached", mappings
    assert sorted(mappings.values()) == sorted([kernel, libc, "/usr/bin/memcached"])
