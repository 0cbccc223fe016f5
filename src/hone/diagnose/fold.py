"""Fold `perf script` text into stacks, with the semantics of the standard folded-stack format.

The folded format is one line per unique stack, `root;caller;...;leaf count`. The rules are those
of stackcollapse-perf and its Rust port inferno (whose output hone's is tested against):

- the root frame is the process name (spaces become `_`), with `-PID` or `-PID/TID` on request;
- only events of one type are kept: the one asked for, else the first one seen;
- a sample counts its period when the event line has one (cpu-clock: nanoseconds), else 1;
  hone's `Profile` counts samples instead (`count="samples"`);
- symbol offsets `+0x1d` are stripped, argument lists `(int, char*)` removed (Go's `.(*T)` and
  C++ `(anonymous namespace)` kept), `;` in a name becomes `:`;
- `[unknown]` symbols take the name of their module, `[libc.so.6]`, when it is known;
- `a->b` (Java inlining) becomes `a;b_[i]`; `_[k]` marks kernel frames and `_[j]` JIT frames,
  only when asked.

Two implementations share the line parsers: `_fold_lines`, a plain line-by-line state machine
(the reference), and `_fold_blocks`, the fast path. perf prints the same call stack as the same
block of text every time, so the fast path splits the input into events at blank lines, counts
(thread, stack block) pairs with one dictionary update per event, and parses each unique block
once at the end. Input it cannot take that way (comment lines, blank lines of spaces, a stack on
the event line, odd event lines) sends it to the reference.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple

Count = Literal["period", "samples"]


class Frame(NamedTuple):
    """One frame of a call stack: the function name as folded and the module (shared object,
    executable, `[kernel.kallsyms]`, `[unknown]`) from perf script's `(path)` column."""

    function: str
    module: str


Stack = tuple[Frame, ...]
# (root frame: process name with -pid or -pid/tid when asked, frames root first) -> count
Stacks = dict[tuple[str, Stack], int]
# the same stacks -> {the addresses of their frames, root first: count}
Addresses = dict[tuple[str, Stack], dict[tuple[int, ...], int]]


@dataclass(frozen=True)
class FoldOptions:
    """stackcollapse-perf's options; the defaults are its defaults."""

    include_pid: bool = False
    include_tid: bool = False
    annotate_kernel: bool = False
    annotate_jit: bool = False
    include_addrs: bool = False
    event: str | None = None
    count: Count = "period"


def fold_perf_script(data: str | bytes, **options: object) -> dict[str, int]:
    """`perf script` text -> {folded stack: count}; options are `FoldOptions` fields."""
    return to_folded(parse_perf_script(data, **options))


def parse_perf_script(data: str | bytes, **options: object) -> Stacks:
    """`perf script` text -> {(root, frames with modules): count}, the per-module variant."""
    opts = FoldOptions(**options)  # type: ignore[arg-type]
    raw = data.encode() if isinstance(data, str) else data
    stacks = _fold_blocks(raw, opts)
    return _fold_lines(raw, opts) if stacks is None else stacks


def frame_addresses(data: str | bytes, **options: object) -> Addresses | None:
    """For each stack as `parse_perf_script` keys it, the addresses perf printed for its frames
    (root first, as the frames; 0 where a line has none) with the samples of each; None for
    input that the fast path does not take (the line-by-line reference keeps no addresses)."""
    opts = FoldOptions(**options)  # type: ignore[arg-type]
    raw = data.encode() if isinstance(data, str) else data
    counts = _count_blocks(raw, opts)
    return None if counts is None else _resolve(counts, opts, addresses=True)  # type: ignore[return-value]


def to_folded(stacks: Stacks) -> dict[str, int]:
    """Per-module stacks -> folded lines (stacks that fold to the same text are summed)."""
    folded: dict[str, int] = {}
    for (root, frames), count in stacks.items():
        key = ";".join([root, *(f.function for f in frames)])
        folded[key] = folded.get(key, 0) + count
    return folded


def format_folded(folded: dict[str, int]) -> str:
    """Folded stacks as text, one `stack count` line each, sorted like inferno's output."""
    return "".join(f"{stack} {count}\n" for stack, count in sorted(folded.items()))


def parse_folded(text: str, source: str = "folded input") -> dict[str, int]:
    """Folded text -> {stack: count}; a malformed line raises ValueError naming it."""
    folded: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack or not count.isdigit():
            shown = line if len(line) <= 80 else line[:77] + "..."  # a CSV's header: 1,400 chars
            raise ValueError(f"{source}:{number}: expected 'frame;frame;... count', got {shown!r}")
        folded[stack] = folded.get(stack, 0) + int(count)
    return folded


def first_event(data: str | bytes) -> str | None:
    """The event type of the first sample: what folding keeps when no event is asked for."""
    text = data if isinstance(data, str) else data[:65536].decode("utf-8", "replace")
    for line in text[:65536].splitlines():
        if line.strip() and not line[0].isspace() and not line.startswith("#"):
            event = _parse_event_line(line, FoldOptions())
            if event is not None and event.event is not None:
                return event.event
    return None


# ---- line parsers shared by both implementations -------------------------------------------

# The first word after the process name that is all digits (and slashes): PID or PID/TID.
_EVENT_LINE = re.compile(r"(.*?) +([0-9/]+) ")
_HEX = frozenset("0123456789abcdefABCDEF")


class _Event(NamedTuple):
    root: str
    event: str | None
    weight: int
    stack_line: str | None  # a one-frame stack printed on the event line itself


def _parse_event_line(line: str, opts: FoldOptions) -> _Event | None:
    match = _EVENT_LINE.match(line)
    if match is None:
        return None
    comm, word = match.groups()
    pid, slash, tid = word.rpartition("/")
    if not slash:
        pid = "?"
    root = comm.strip().replace(" ", "_")
    if opts.include_tid:
        root += f"-{pid}/{tid}"
    elif opts.include_pid:
        root += f"-{pid}"
    pieces = line[match.end() :].split(":", 2)
    event = None
    period = None
    if len(pieces) > 1:
        words = pieces[1].rsplit(" ", 2)
        event = words[-1]
        if len(words) > 1 and words[-2].isascii() and words[-2].isdigit():
            period = int(words[-2])
    stack_line = None
    if len(pieces) > 2:
        after = pieces[2]
        cut = min((i for i in (after.find(":"), after.find(" ")) if i >= 0), default=-1)
        stack_line = after[cut + 1 :].strip() or None
    weight = 1 if opts.count == "samples" or period is None else period
    return _Event(root, event, weight, stack_line)


def _parse_stack_line(line: str, java: bool, opts: FoldOptions) -> list[Frame] | None:
    """One stack line -> its frames (several for Java inlining, none for a skipped frame);
    None for a line that is not a stack line."""
    pc, _, rest = line.strip().partition(" ")
    rawfunc, space, module = rest.rpartition(" ")
    if not space or len(module) < 2 or module[0] != "(" or module[-1] != ")":
        return None
    module = module[1:-1]
    rawfunc = rawfunc.strip() or " "
    offset = rawfunc.rfind("+0x")
    if offset >= 0 and _HEX.issuperset(rawfunc[offset + 3 :]):
        rawfunc = rawfunc[:offset]
    if rawfunc.startswith("("):
        return []
    frames = []
    for index, part in enumerate(rawfunc.split("->")):
        func = _tidy(_module_fallback(part, module, pc, opts.include_addrs))
        if java and func.startswith("L") and "/" in func:
            func = func[1:]
        if index > 0:
            if "_[i]" not in func:
                func += "_[i]"
        elif opts.annotate_kernel and is_kernel(module):
            func += "_[k]"
        elif opts.annotate_jit and _is_jit(module) and "_[j]" not in func:
            func += "_[j]"
        frames.append(Frame(func, module))
    return frames


def _module_fallback(func: str, module: str, pc: str, include_addrs: bool) -> str:
    if func != "[unknown]":
        return func
    if module == "[unknown]":
        if not include_addrs:
            return func
        name = "unknown"
    else:
        name = module[module.rfind("/") + 1 :]
    return f"[{name} <{pc}>]" if include_addrs else f"[{name}]"


def _tidy(func: str) -> str:
    """`;` becomes `:` and a top-level argument list is cut off."""
    func = func.replace(";", ":")
    if "(" not in func:
        return func
    depth = 0
    after_dot = -1
    for index, char in enumerate(func):
        if char in "<{[":
            depth += 1
        elif char in ">}])":
            depth -= 1
        elif char == "(":
            if (
                depth == 0
                and after_dot != index
                and not func.startswith("(anonymous namespace)", index)
            ):
                return func[:index]
            depth += 1
        elif char == ".":
            after_dot = index + 1
    return func


_VMLINUX = re.compile(r"vmlinux[A-Za-z0-9._-]*\Z")


#: perf's bracketed names of user-space mappings: the vDSO runs in user mode (clock_gettime
#: answered there is user time, not a system call), the rest are the process's own memory.
_USER_MAPPINGS = ("[unknown]", "[vdso]", "[vdso32]", "[vdsox32]", "[vsyscall]", "[heap]",
                  "[stack]", "[anon", "[uprobes]")  # fmt: skip


def is_kernel(module: str) -> bool:
    """Kernel modules as perf names them: `[kernel.kallsyms]`, `[ext4]`, `*.ko`, `vmlinux*`."""
    if module.startswith(_USER_MAPPINGS):
        return False
    if module.startswith("[") or module.endswith(".ko"):
        return True
    at = module.rfind("vmlinux")
    return at >= 0 and _VMLINUX.match(module, at) is not None


def _is_jit(module: str) -> bool:
    return (module.startswith("/tmp/perf-") and module.endswith(".map")) or (
        "/jitted-" in module and module.endswith(".so")
    )


# ---- the reference: line by line -----------------------------------------------------------


def _fold_lines(raw: bytes, opts: FoldOptions) -> Stacks:
    stacks: Stacks = {}
    event_filter = opts.event
    in_event = False
    skip = False
    root = ""
    weight = 1
    frames: list[Frame] = []

    def emit() -> None:
        nonlocal in_event, skip, frames
        if frames:
            key = (root, tuple(frames))
            stacks[key] = stacks.get(key, 0) + weight
        in_event, skip, frames = False, False, []

    def on_stack_line(line: str) -> None:
        if skip:
            return
        parsed = _parse_stack_line(line, root.startswith("java"), opts)
        if parsed:
            frames[:0] = parsed

    for line in _lines(raw):
        if line.startswith("#"):
            continue
        line = line.rstrip()
        if not line:
            emit()
        elif in_event:
            on_stack_line(line)
        else:
            in_event = True
            event = _parse_event_line(line, opts)
            if event is None:
                in_event = False
                continue
            root, weight = event.root, event.weight
            if event.event is not None:
                if event_filter is None:
                    event_filter = event.event
                elif event.event != event_filter:
                    skip = True
                    continue
            if event.stack_line is not None:
                on_stack_line(event.stack_line)
                emit()
    emit()
    return stacks


def _lines(raw: bytes) -> Iterable[str]:
    for line in raw.split(b"\n"):
        yield line.decode("utf-8", "replace")


# ---- the fast path: one dictionary update per event -----------------------------------------

_EVENT_HEAD = re.compile(rb"(.*?) +([0-9/]+) ")


def _fold_blocks(raw: bytes, opts: FoldOptions) -> Stacks | None:
    """Count (process, stack block) pairs, then parse each unique block once; None when the
    input needs the line-by-line reference."""
    counts = _count_blocks(raw, opts)
    return None if counts is None else _resolve(counts, opts)  # type: ignore[return-value]


def _count_blocks(raw: bytes, opts: FoldOptions) -> dict[tuple[bytes, bytes], int] | None:
    """The samples of each (event line up to the pid, stack block) pair."""
    if raw.startswith(b"#") or b"\n#" in raw or b"\r" in raw:
        return None
    wanted = opts.event.encode() if opts.event is not None else None
    samples = opts.count == "samples"
    # The text after the first colon of an event line ("  10101010 cpu-clock:pppH: ") repeats;
    # parsed once: (event, period or None), or None when a stack follows on the same line.
    tails: dict[bytes, tuple[bytes | None, int | None] | None] = {}
    counts: dict[tuple[bytes, bytes], int] = {}
    match = _EVENT_HEAD.match
    for chunk in raw.split(b"\n\n"):
        if not chunk or chunk[0] == 10:
            chunk = chunk.lstrip(b"\n")
            if not chunk:
                continue
        head, _, block = chunk.partition(b"\n")
        found = match(head)
        if found is None:
            return None
        _, colon, tail = head[found.end() :].partition(b":")
        tail = colon + tail
        parsed = tails.get(tail, False)
        if parsed is False:
            parsed = tails[tail] = _parse_tail(tail)
        if parsed is None:
            return None
        event, period = parsed
        if event is not None:
            if wanted is None:
                wanted = event
            elif event != wanted:
                continue
        key = (head[: found.end()], block)
        counts[key] = counts.get(key, 0) + (1 if samples or period is None else period)
    return counts


def _parse_tail(tail: bytes) -> tuple[bytes | None, int | None] | None:
    """The event line from its first colon on -> (event, period), None for a stack on it."""
    if not tail:
        return None, None
    pieces = tail[1:].split(b":", 1)
    words = pieces[0].rsplit(b" ", 2)
    period = int(words[-2]) if len(words) > 1 and words[-2].isdigit() else None
    if len(pieces) > 1:
        after = pieces[1].decode("utf-8", "replace")
        cut = min((i for i in (after.find(":"), after.find(" ")) if i >= 0), default=-1)
        if after[cut + 1 :].strip():
            return None
    return words[-1], period


def _resolve(
    counts: dict[tuple[bytes, bytes], int], opts: FoldOptions, addresses: bool = False
) -> Stacks | Addresses | None:
    """The stacks' samples, or with `addresses` the samples of each stack's address stacks."""
    stacks: dict = {}
    roots: dict[bytes, str] = {}
    resolvers = {java: _BlockResolver(java, opts) for java in (False, True)}
    for (head, block), count in counts.items():
        root = roots.get(head)
        if root is None:
            event = _parse_event_line(head.decode("utf-8", "replace"), opts)
            assert event is not None  # the same pattern matched it
            root = roots[head] = event.root
        frames = resolvers[root.startswith("java")].frames(block)
        if frames is None:
            return None
        if frames and addresses:
            spread = stacks.setdefault((root, frames), {})
            pcs = resolvers[root.startswith("java")].addresses(block)
            spread[pcs] = spread.get(pcs, 0) + count
        elif frames:
            key = (root, frames)
            stacks[key] = stacks.get(key, 0) + count
    return stacks


class _BlockResolver:
    """Stack blocks (leaf line first) -> frames, root first; each distinct line parsed once."""

    def __init__(self, java: bool, opts: FoldOptions) -> None:
        self.java = java
        self.opts = opts
        self.lines: dict[bytes, list[Frame] | None] = {}
        self.addressed: dict[bytes, list[int]] = {}  # a line's address for each of its frames

    def frames(self, block: bytes) -> Stack | None:
        """None when the block holds a line of spaces (an event boundary: the reference)."""
        frames: list[Frame] = []
        lines = self.lines
        for line in reversed(block.split(b"\n")):
            parsed = lines.get(line, False)
            if parsed is False:
                parsed = lines[line] = self._parse(line)
            if parsed is None:
                return None
            frames += parsed
        return tuple(frames)

    def addresses(self, block: bytes) -> tuple[int, ...]:
        """The address of each of the block's frames (after `frames`), root first."""
        found: list[int] = []
        for line in reversed(block.split(b"\n")):
            addressed = self.addressed.get(line)
            if addressed is None:
                pc = line.split(None, 1)[0].decode("ascii", "replace") if line.strip() else ""
                address = int(pc, 16) if pc and _HEX.issuperset(pc) else 0
                addressed = self.addressed[line] = [address] * len(self.lines[line] or ())
            found += addressed
        return tuple(found)

    def _parse(self, line: bytes) -> list[Frame] | None:
        text = line.decode("utf-8", "replace").rstrip()
        if not text:
            return None if line else []
        return _parse_stack_line(text, self.java, self.opts) or []


def main(argv: list[str] | None = None) -> None:
    """`python -m hone.diagnose.fold [PERF_SCRIPT_FILE]`: folded stacks on stdout (the input
    from the file or stdin), like stackcollapse-perf; `--kernel`, `--pid`, `--tid`."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    flags = {"--kernel": "annotate_kernel", "--jit": "annotate_jit", "--pid": "include_pid"}
    flags |= {"--tid": "include_tid", "--addrs": "include_addrs"}
    options = {flags[a]: True for a in args if a in flags}
    paths = [a for a in args if a not in flags]
    try:
        data = Path(paths[0]).read_bytes() if paths else sys.stdin.buffer.read()
    except OSError as error:
        raise SystemExit(f"hone: {paths[0]}: {error.strerror}") from None
    sys.stdout.write(format_folded(fold_perf_script(data, **options)))


if __name__ == "__main__":
    main()
