"""`Profile`: one on-CPU profile, the object the rest of diagnose (and hone serve) builds on.

    from hone.diagnose.profile import Profile
    profile = Profile.from_perf_script(text, frequency_hz=99, duration_s=30, target="pid 1234")
    profile.total                      # samples
    profile.stacks                     # {(thread name, (Frame(function, module), ...)): samples}
    profile.folded()                   # {"thread;root;...;leaf": samples}, the folded format
    profile.threads()                  # {thread name: samples}
    profile.save("run.hone"); Profile.load("run.hone")

Frames are root first; `Frame.module` is the shared object, executable or `[kernel.kallsyms]`
that perf named for the frame (a JavaScript frame's is its script: hone.diagnose.nodejs). A
`.hone` file is gzip-compressed JSON with a frame table, so a profile of 100k stacks stays a few
megabytes; `format` and `version` let later versions read it.
"""

from __future__ import annotations

import gzip
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hone.diagnose.fold import (
    Addresses,
    Frame,
    Stack,
    first_event,
    frame_addresses,
    parse_folded,
    parse_perf_script,
)
from hone.diagnose.nodejs import script_frames
from hone.errors import HoneError
from hone.outfile import write_atomic

FORMAT = "hone-profile"
VERSION = 1


@dataclass
class Profile:
    """Samples by (thread name, stack) plus how they were taken."""

    stacks: dict[tuple[str, Stack], int]
    event: str = "cpu-clock"
    frequency_hz: float | None = None
    duration_s: float | None = None
    target: str = ""  # "pid 1234" or the profiled command line
    perf_data: str | None = None  # the raw perf.data, when it was kept
    created: float = field(default_factory=time.time)
    #: the addresses perf printed for each stack's frames (`from_perf_script(addresses=True)`),
    #: by which a Go program's pprof names source lines (module pprof); not saved
    addresses: Addresses | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_perf_script(
        cls,
        data: str | bytes,
        *,
        event: str | None = None,
        per_process: bool = False,
        addresses: bool = False,
        **meta: Any,
    ) -> Profile:
        """A profile of `perf script` text, counted in samples (events of one type). With
        `per_process` (perf script's lines name pid/tid) and samples of more than one process,
        each root frame is the thread's name and its process's pid, `nginx-2922`: the flame
        graph splits by process first. Node's JavaScript frames are named by function and
        script, as Python's are. With `addresses`, the profile keeps the address perf printed
        for each frame of each sample (`Profile.addresses`)."""
        options = {"count": "samples", "event": event, "include_pid": per_process}
        parsed = parse_perf_script(data, **options)
        # one process: its threads' names alone, as perf script without pids gives them
        alone = per_process and len({thread.rpartition("-")[2] for thread, _ in parsed}) < 2

        def key_of(thread: str, frames: Stack) -> tuple[str, Stack]:
            named = script_frames(_inlined_in_place(frames))
            return (thread.rpartition("-")[0] if alone else thread, named)

        stacks: dict[tuple[str, Stack], int] = {}
        for (thread, frames), count in parsed.items():
            key = key_of(thread, frames)
            stacks[key] = stacks.get(key, 0) + count
        found = frame_addresses(data, **options) if addresses else None
        if found is not None:
            keyed: Addresses = {}
            for (thread, frames), spread in found.items():
                into = keyed.setdefault(key_of(thread, frames), {})
                for pcs, count in spread.items():
                    into[pcs] = into.get(pcs, 0) + count
            found = keyed
        event = event or first_event(data) or "cpu-clock"
        return cls(stacks=stacks, event=event, addresses=found, **meta)

    @classmethod
    def from_folded(cls, folded: dict[str, int], **meta: Any) -> Profile:
        """A profile of folded stacks (`root;...;leaf count`); modules are unknown ("")."""
        stacks: dict[tuple[str, Stack], int] = {}
        for line, count in folded.items():
            root, *names = line.split(";")
            key = (root, tuple(Frame(name, "") for name in names))
            stacks[key] = stacks.get(key, 0) + count
        return cls(stacks=stacks, **meta)

    @property
    def total(self) -> int:
        return sum(self.stacks.values())

    def folded(self, threads: bool = True) -> dict[str, int]:
        """The folded format; with `threads=False` the thread name is left out of the stacks."""
        folded: dict[str, int] = {}
        for (thread, frames), count in self.stacks.items():
            names = [f.function for f in frames]
            key = ";".join([thread, *names] if threads else names)
            if key:
                folded[key] = folded.get(key, 0) + count
        return folded

    def threads(self) -> dict[str, int]:
        """Samples per thread (perf's comm of the sampled thread), busiest first."""
        counts: dict[str, int] = {}
        for (thread, _), count in self.stacks.items():
            counts[thread] = counts.get(thread, 0) + count
        return dict(sorted(counts.items(), key=lambda item: -item[1]))

    def save(self, path: str | Path) -> Path:
        """Write a `.hone` file (gzip JSON), whole or not at all; returns its path."""
        path = Path(path)
        write_atomic(
            path, gzip.compress(json.dumps(self.document(), separators=(",", ":")).encode(), 6)
        )
        return path

    def document(self) -> dict[str, Any]:
        """The `.hone` file's JSON: frames listed once, samples as indexes into them."""
        index: dict[Frame, int] = {}
        samples = []
        for (thread, frames), count in self.stacks.items():
            ids = [index.setdefault(frame, len(index)) for frame in frames]
            samples.append([thread, ids, count])
        document = {
            "format": FORMAT,
            "version": VERSION,
            "event": self.event,
            "frequency_hz": self.frequency_hz,
            "duration_s": self.duration_s,
            "target": self.target,
            "perf_data": self.perf_data,
            "created": self.created,
            "frames": [list(frame) for frame in index],
            "samples": samples,
        }
        return document

    @classmethod
    def load(cls, path: str | Path) -> Profile:
        """Read a `.hone` file (or a folded text file); bad input is one HoneError line."""
        path = Path(path)
        try:
            raw = path.read_bytes()
        except OSError as error:
            raise HoneError(f"cannot read the profile: {error.strerror}", file=path) from None
        if not raw.startswith(b"\x1f\x8b"):
            try:
                folded = parse_folded(raw.decode("utf-8", "replace"), str(path))
            except ValueError as error:
                line, _, reason = str(error).removeprefix(f"{path}:").partition(": ")
                raise HoneError(
                    f"{reason} (not a hone profile or folded stacks)", file=path, line=int(line)
                ) from None
            if not folded:  # an empty report would pass for a diagnosis that found nothing
                raise HoneError("empty: no stacks to diagnose", file=path)
            return cls.from_folded(folded)
        try:
            document = json.loads(gzip.decompress(raw))
            if document.get("format") != FORMAT or document.get("version") != VERSION:
                raise ValueError(f"format {document.get('format')!r} v{document.get('version')}")
            frames = [Frame(str(f), str(m)) for f, m in document["frames"]]
            stacks: dict[tuple[str, Stack], int] = {}
            for thread, ids, count in document["samples"]:
                key = (str(thread), tuple(frames[i] for i in ids))
                stacks[key] = stacks.get(key, 0) + int(count)
            return cls(
                stacks=stacks,
                event=str(document.get("event", "cpu-clock")),
                frequency_hz=document.get("frequency_hz"),
                duration_s=document.get("duration_s"),
                target=str(document.get("target", "")),
                perf_data=document.get("perf_data"),
                created=float(document.get("created", 0.0)),
            )
        except (OSError, EOFError, ValueError, KeyError, TypeError, IndexError) as error:
            raise HoneError(f"not a readable hone profile: {error}", file=path) from None


def _inlined_in_place(frames: Stack) -> Stack:
    """perf names the module of an inlined frame "inlined" (with DWARF call graphs); it lives in
    the module of the frame it was inlined next to, toward the leaf."""
    if not any(frame.module == "inlined" for frame in frames):
        return frames
    fixed = list(frames)
    module = ""
    for index in range(len(fixed) - 1, -1, -1):
        if fixed[index].module == "inlined":
            fixed[index] = Frame(fixed[index].function, module or "inlined")
        else:
            module = fixed[index].module
    return tuple(fixed)
