"""Source lines of a Go binary's code addresses, read from the line table the Go linker writes.

`go build -pgo` matches a CPU profile's samples to its code by call site: the caller's name and
the call's line counted from the caller's `func` line. perf's samples name functions only;
this module gives the lines for the addresses perf sampled. Every Go binary carries them, in
`.gopclntab` (kept in stripped binaries too: the runtime's tracebacks read it), with no Go
toolchain needed: for each function its name, entry, `func` line (`startLine`, Go 1.20 and
later), and tables from code address to file, line and inlined call (runtime/symtab.go).

    table = LineTable.open("/srv/prog")        # None: no Go 1.20+ line table
    table.lines(0x8e2d8, "main.rounds")        # [Line("main.rounds", "/src/prog.go", 50, 47)]

An address in code the compiler inlined gives one Line per inlined call, innermost first, as
runtime/pprof lists them. The inlined calls' tables are found by the binary's `go:func.*`
symbol or, in a binary stripped of its symbols, where the runtime finds them: in its module's
record, which stripping keeps. Where neither is found an address in inlined code has no lines
(rather than the outer function named with the inlined code's line).
"""

from __future__ import annotations

import struct
from bisect import bisect_right
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO, NamedTuple

from hone.diagnose.fold import Addresses, Frame
from hone.diagnose.golang import Elf, Section, elf_of
from hone.diagnose.profile import Profile

#: The line table's header magic since Go 1.20 (1.18 and 1.19 wrote no start lines).
MAGIC = 0xFFFFFFF1
#: runtime/symtab.go: the pcdata table of a PC's inlined call, the funcdata of the calls.
_INLINE_INDEX, _INLINE_TREE = 2, 3
#: A function's record (runtime._func) up to its pcdata offsets: entryOff, nameOff, args,
#: deferreturn, pcsp, pcfile, pcln, npcdata, cuOffset, startLine, funcID, flag, pad, nfuncdata.
_FUNC = "IiiIIIIIIiBBxB"
#: An inlined call (runtime.inlinedCall): funcID, pad, nameOff, parentPc, startLine.
_INLINED = "B3xiii"


class Line(NamedTuple):
    """What pprof's Line and Function say of an address: the function, its file, the line
    and the function's `func` line."""

    function: str
    file: str
    line: int
    start_line: int


class LineTable:
    """A Go binary's line table (its `.gopclntab`), read once."""

    def __init__(self, elf: Elf, table: bytes, gofunc: bytes | None, text: Section) -> None:
        self.order = elf.order
        self.data = table
        self.gofunc = gofunc  # the bytes from go:func.* on: the inlined calls' tables
        self.text = text
        self.quantum = table[6]
        pointer = "Q" if table[7] == 8 else "I"
        fields = struct.unpack_from(self.order + pointer * 8, table, 8)
        count, _, _, self.names, self.cus, self.files, self.pcs, functab = fields
        pairs = struct.unpack_from(f"{self.order}{2 * count}I", table, functab)
        self.entries = pairs[0::2]  # entry offsets from the start of the text, ascending
        self.records = [functab + offset for offset in pairs[1::2]]
        # the pc-value tables read: (offset, function entry) -> pc range ends, values
        self.decoded: dict[tuple[int, int], tuple[list[int], list[int]]] = {}

    @classmethod
    def open(cls, path: str | Path) -> LineTable | None:
        """The table of a Go 1.20+ binary; None for another file or an older Go's table."""
        try:
            with open(path, "rb") as stream:
                elf = elf_of(stream)
                if elf is None or ".gopclntab" not in elf.sections or ".text" not in elf.sections:
                    return None
                where = elf.sections[".gopclntab"]
                stream.seek(where.offset)
                table = stream.read(where.size)
                (magic,) = struct.unpack_from(elf.order + "I", table)
                if magic != MAGIC or table[4:6] != b"\0\0" or table[7] not in (4, 8):
                    return None
                gofunc = _gofunc(stream, elf, table[7] == 8)
                return cls(elf, table, gofunc, elf.sections[".text"])
        except (OSError, struct.error, IndexError, ValueError):
            return None

    def address(self, offset: int) -> int:
        """The code address of a file offset in the text (perf prints the sampled addresses
        of a binary's frames as offsets into its file)."""
        return offset - self.text.offset + self.text.address

    def lines(self, address: int, function: str | None) -> list[Line] | None:
        """The lines of `address` (innermost first), or None when it is not in the code of
        `function` (perf's name for its frame: the two readings must agree) or, for None (perf
        named no function: a stripped binary), not in the text."""
        found_at = self._function_at(address)
        if found_at is None:
            return None
        at, record, name = found_at
        entry_off, _, _, _, _, pcfile, pcln, npcdata, cu, start = record[:10]
        if function is not None and function.removesuffix(".abi0") != name.removesuffix(".abi0"):
            return None
        entry = self.text.address + entry_off
        after = self.records[at] + struct.calcsize(_FUNC)
        inline = self._word(after + 4 * _INLINE_INDEX) if npcdata > _INLINE_INDEX else 0
        tree = None
        if inline and self.gofunc is not None and record[12] > _INLINE_TREE:
            offset = self._word(after + 4 * npcdata + 4 * _INLINE_TREE)
            tree = offset if offset != 0xFFFFFFFF else None
        found = []
        pc = address
        for _ in range(64):  # an inlined call's parent PC leads out; a bad table could loop
            file = self._file(cu, self._value(pcfile, entry, pc))
            line = self._value(pcln, entry, pc)
            index = self._value(inline, entry, pc) if inline else -1
            if index < 0:
                return [*found, Line(name, file, line, start)]
            if tree is None:  # inlined code, and no table of the calls: no lines, not wrong ones
                return None
            call = struct.unpack_from(self.order + _INLINED, self.gofunc or b"", tree + 16 * index)
            _, inlined_name, parent, inlined_start = call
            found.append(Line(self._string(self.names + inlined_name), file, line, inlined_start))
            pc = entry + parent
        return None

    def function(self, address: int) -> str | None:
        """The function whose code holds `address` (the physical one: an inlined call's code
        is its caller's), None outside the text."""
        found_at = self._function_at(address)
        return found_at[2] if found_at else None

    def _function_at(self, address: int) -> tuple[int, tuple, str] | None:
        """The index, record and name of the function whose code holds `address`."""
        if not self.text.address <= address < self.text.address + self.text.size:
            return None
        at = bisect_right(self.entries, address - self.text.address) - 1
        if at < 0 or at >= len(self.records):
            return None
        record = struct.unpack_from(self.order + _FUNC, self.data, self.records[at])
        return at, record, self._string(self.names + record[1])

    def _value(self, offset: int, entry: int, target: int) -> int:
        """The value a pc-value table gives `target` (-1 past its end)."""
        key = (offset, entry)  # functions share identical tables
        if key not in self.decoded:
            self.decoded[key] = self._decode(offset, entry)
        ends, values = self.decoded[key]
        at = bisect_right(ends, target)
        return values[at] if at < len(values) else -1

    def _decode(self, offset: int, entry: int) -> tuple[list[int], list[int]]:
        """A pc-value table (runtime/symtab.go's pcvalue): pairs of varints, a zig-zag value
        delta and a pc delta in instruction quanta, from the function's entry on; as the end
        of each pc range and its value."""
        data, at, pc, value = self.data, self.pcs + offset, entry, -1
        ends: list[int] = []
        values: list[int] = []
        while True:
            delta, at = uvarint(data, at)
            if delta == 0 and ends:
                return ends, values
            value += -(delta >> 1) - 1 if delta & 1 else delta >> 1
            step, at = uvarint(data, at)
            pc += step * self.quantum
            ends.append(pc)
            values.append(value)

    def _file(self, cu: int, number: int) -> str:
        if number < 0:
            return ""
        return self._string(self.files + self._word(self.cus + 4 * (cu + number)))

    def _word(self, at: int) -> int:
        return struct.unpack_from(self.order + "I", self.data, at)[0]

    def _string(self, at: int) -> str:
        return self.data[at : self.data.index(b"\0", at)].decode(errors="replace")


def uvarint(data: bytes, at: int) -> tuple[int, int]:
    """The unsigned varint (LEB128, as Go and protobuf write them) at `at`, and where it ends."""
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _gofunc(stream: BinaryIO, elf: Elf, wide: bool) -> bytes | None:
    """The bytes of the binary from `go:func.*` to the end of its section (where the funcdata of
    its functions are, the inlined calls' tables among them); None where it is not found."""
    address = _gofunc_symbol(stream, elf)
    if address is None:
        address = _gofunc_of_module(stream, elf, wide)
    for section in elf.sections.values():
        if address is not None and section.size and 0 <= address - section.address < section.size:
            stream.seek(section.offset + address - section.address)
            return stream.read(section.address + section.size - address)
    return None


def _gofunc_symbol(stream: BinaryIO, elf: Elf) -> int | None:
    """The address of the `go:func.*` symbol; None without a symbol table (a stripped binary)."""
    symbols, names = elf.sections.get(".symtab"), elf.sections.get(".strtab")
    if symbols is None or names is None:
        return None
    stream.seek(names.offset)
    at = stream.read(names.size).find(b"\0go:func.*\0")
    if at < 0:
        return None
    stream.seek(symbols.offset)
    table = stream.read(symbols.size)
    layout = elf.order + ("IBBHQQ" if elf.wide else "IIIBBH")
    size = struct.calcsize(layout)
    name = struct.pack(elf.order + "I", at + 1)  # a symbol's first field: its name's offset
    found = table.find(name)
    while found >= 0 and found % size:
        found = table.find(name, found + 1)
    if found < 0:
        return None
    symbol = struct.unpack_from(layout, table, found)
    return symbol[4] if elf.wide else symbol[1]


#: runtime.moduledata, Go 1.20 and later, in words: pcHeader, six slices of three words,
#: findfunctab, minpc, maxpc, then text (word 22) ... rodata (word 39) and gofunc (word 40).
_MODULE_TEXT, _MODULE_RODATA, _MODULE_GOFUNC = 22, 39, 40


def _gofunc_of_module(stream: BinaryIO, elf: Elf, wide: bool) -> int | None:
    """`go:func.*`'s address as the runtime finds it, in the module's data (`runtime.moduledata`,
    which stripping keeps): the record that starts with the line table's address, where the
    text's and read-only data's addresses stand where they should."""
    table, text = elf.sections[".gopclntab"], elf.sections[".text"]
    word = elf.order + ("Q" if wide else "I")
    step = struct.calcsize(word)
    anchor = struct.pack(word, table.address)
    for name in (".go.module", ".noptrdata", ".data"):  # where Go 1.26 / older linkers put it
        section = elf.sections.get(name)
        if section is None or section.size > 1 << 26:
            continue
        stream.seek(section.offset)
        data = stream.read(section.size)
        at = data.find(anchor)
        while at >= 0:
            if at % step == 0 and at + (_MODULE_GOFUNC + 1) * step <= len(data):
                words = struct.unpack_from(f"{elf.order}{_MODULE_GOFUNC + 1}{word[1]}", data, at)
                rodata = elf.sections.get(".rodata", text)
                if (words[_MODULE_TEXT], words[_MODULE_RODATA]) == (text.address, rodata.address):
                    return words[_MODULE_GOFUNC]
            at = data.find(anchor, at + 1)
    return None


class Lookup:
    """The lines of a profile's frames in Go binaries, by the addresses perf printed for them:
    each binary's table read once, each address looked up once."""

    def __init__(self) -> None:
        self.tables: dict[str, LineTable | None] = {}
        self.found: dict[tuple[str, str, int, bool], tuple[int, list[Line]] | None] = {}

    def __call__(self, frame: Frame, pc: int, leaf: bool) -> tuple[int, list[Line]] | None:
        """The frame's code address and its lines, innermost first; None for a frame outside
        a Go 1.20+ binary or one whose address the table does not place in its function. A
        caller's address is its return address less one (inside the call, whose line it is),
        as runtime/pprof writes it."""
        key = (frame.module, frame.function, pc, leaf)
        if key not in self.found:
            self.found[key] = self._lines(frame, pc, leaf)
        return self.found[key]

    def function(self, frame: Frame, pc: int, leaf: bool) -> str | None:
        """The name of the function whose code holds the frame's address, for a frame perf
        could not name ([prog]: a stripped binary); None where the table does not place it."""
        table = self._table(frame, pc)
        if table is None:
            return None
        for address in (table.address(pc), pc):
            try:
                name = table.function(address - (0 if leaf else 1))
            except (struct.error, IndexError, ValueError):  # a table it cannot read
                return None
            if name:
                return name
        return None

    def _table(self, frame: Frame, pc: int) -> LineTable | None:
        if not pc or not frame.module.startswith("/"):
            return None
        if frame.module not in self.tables:
            self.tables[frame.module] = LineTable.open(frame.module)
        return self.tables[frame.module]

    def _lines(self, frame: Frame, pc: int, leaf: bool) -> tuple[int, list[Line]] | None:
        table = self._table(frame, pc)
        if table is None:
            return None
        # perf (6.1) prints an offset into the binary's file; else it is the address itself.
        # A frame perf could not name ([prog], a stripped binary) is placed by the table alone.
        named = None if frame.function.startswith("[") else frame.function
        for address in (table.address(pc), pc):
            address -= 0 if leaf else 1
            try:
                lines = table.lines(address, named)
            except (struct.error, IndexError, ValueError):  # a table it cannot read: no lines
                return None
            if lines:
                return address, lines
        return None


def named_frames(profile: Profile, lookup: Lookup | None = None) -> Profile:
    """The profile with the frames perf could not name in a stripped Go binary (`[prog]`: built
    with `-ldflags=-s`, as release builds often are) named by the function whose code holds
    their address. perf gave every such frame one name, so stacks that differ only there are
    split again by their addresses; without addresses (not a Go program) it is returned as it
    is. Before, a stripped Go server's verdict was `CPU-bound in function [prog]`."""
    if not profile.addresses or not any(
        frame.function.startswith("[") for _, frames in profile.stacks for frame in frames
    ):
        return profile
    lookup = lookup or Lookup()
    stacks: dict[tuple[str, tuple[Frame, ...]], int] = {}
    addresses: Addresses = {}
    for (thread, frames), count in profile.stacks.items():
        spread = profile.addresses.get((thread, frames)) or {(0,) * len(frames): count}
        for pcs, n in spread.items():
            renamed = list(frames)
            for i, frame in enumerate(frames):
                if frame.function.startswith("[") and pcs[i]:
                    name = lookup.function(frame, pcs[i], i == len(frames) - 1)
                    if name:
                        renamed[i] = Frame(name, frame.module)
            key = (thread, tuple(renamed))
            stacks[key] = stacks.get(key, 0) + n
            into = addresses.setdefault(key, {})
            into[pcs] = into.get(pcs, 0) + n
    return replace(profile, stacks=stacks, addresses=addresses)
