"""Interactive flame graphs as one self-contained SVG file (hone's own renderer and script).

    svg = flamegraph_svg(profile, title="my-benchmark")        # or render(folded_dict)
    svg = diff_flamegraph_svg(before, after)                    # red grew, blue shrank
    Path("flame.svg").write_text(svg)

The SVG is drawn in full by Python, so it shows without scripts too (an <img>, a viewer); the
embedded script (assets/flamegraph.js) adds hover details and a tooltip, search with highlighting
and the matched share, click to zoom, reset, the icicle view (root on top) and the reversed view
(stacks merged by their leaf: who calls the hot functions). The reversed view is drawn as a
second, hidden group; the script only moves and hides elements.

Frames narrower than `min_width` pixels (default 0.25, a sliver no one can see or point at)
are not drawn one by one: consecutive narrow siblings become one grey "N narrow frames" block
(when together they are wide enough), and their subtrees are never walked. 100k unique stacks
then give about 9,000 frames per view instead of 25,000 at 0.1 px, which keeps the file small
and zooming smooth in a browser. Frames too narrow for a label get no <text> element.

Layout: stacks are sorted, so siblings appear in name order and every frame is opened when a stack
first differs from the previous one and closed when a later one does: one pass, no tree objects.
In a differential graph the widths are the second profile's and the colour is the change of the
frame's self share (red grew, blue shrank, white unchanged; in the reversed view the change of
its width, which is self time there); the tooltip gives both total shares. Frames only the first
profile has do not show (they have no width): the diff tables list them.
"""

from __future__ import annotations

import gc
import json
import re
import zlib
from bisect import bisect_right
from dataclasses import dataclass
from importlib import resources
from itertools import accumulate
from operator import itemgetter
from pathlib import Path
from xml.sax.saxutils import escape

from hone.diagnose.fold import is_kernel
from hone.diagnose.profile import Profile

FRAME_HEIGHT = 16
FONT_SIZE = 12
CHAR_WIDTH = 0.59 * FONT_SIZE  # average glyph width of the sans-serif font at FONT_SIZE
PAD = 10
TOP = 58  # title, subtitle and buttons
BOTTOM = 30  # the details line


@dataclass(frozen=True)
class Box:
    """One drawn frame: depth (0 = the root "all"), start and width in samples."""

    name: str
    depth: int
    x: int
    width: int
    self: int
    merged: int = 0  # > 0: a block of this many narrow frames
    path: str = ""  # the stack down to this frame (differential graphs only)


def flamegraph_svg(profile: Profile, **options: object) -> str:
    """The flame graph of a profile (thread names as the root frames)."""
    options.setdefault("title", f"Flame graph: {profile.target}" if profile.target else None)
    options.setdefault("modules", modules_of(profile))
    return render(profile.folded(), **options)  # type: ignore[arg-type]


def diff_flamegraph_svg(before: Profile, after: Profile, **options: object) -> str:
    """The differential flame graph of two profiles, shaped like `after`."""
    options.setdefault("title", "Differential flame graph")
    options.setdefault("modules", modules_of(after))
    return render(after.folded(), before=before.folded(), **options)  # type: ignore[arg-type]


def modules_of(profile: Profile) -> dict[str, str]:
    """Function name -> its module's file name (the first one seen, when names repeat)."""
    modules: dict[str, str] = {}
    for _, frames in profile.stacks:
        for frame in frames:
            if frame.module and frame.function not in modules:
                modules[frame.function] = frame.module
    for thread, _ in profile.stacks:
        modules.setdefault(thread, "[thread]")
    return modules


def render(
    folded: dict[str, int],
    *,
    before: dict[str, int] | None = None,
    title: str | None = None,
    subtitle: str = "",
    width: int = 1200,
    min_width: float = 0.25,
    unit: str = "samples",
    modules: dict[str, str] | None = None,
) -> str:
    """SVG text of a flame graph of folded stacks ({"a;b;c": count}); `before` makes it a
    differential one; `modules` (function -> module path) adds the module to each frame's
    details and colours kernel frames orange."""
    # Millions of short-lived frame strings and lists, none cyclic: the cyclic garbage
    # collector would rescan them again and again (half the run time at 100k stacks).
    paused = gc.isenabled()
    gc.disable()
    try:
        return _render(folded, before, title, subtitle, width, min_width, unit, modules or {})
    finally:
        if paused:
            gc.enable()


def _render(
    folded: dict[str, int],
    before: dict[str, int] | None,
    title: str | None,
    subtitle: str,
    width: int,
    min_width: float,
    unit: str,
    modules: dict[str, str],
) -> str:
    keys = [key for key, count in folded.items() if count > 0]
    counts = [folded[key] for key in keys]
    stacks = [key.split(";") for key in keys]
    total = sum(counts)
    inner = width - 2 * PAD
    min_samples = min_width * total / inner if total else 0.0
    diff = before is not None
    # Sort keys: the text with NUL between frames orders exactly like the lists of frames.
    normal = _layout(stacks, counts, [key.replace(";", "\0") for key in keys], min_samples, diff)
    stacks = [frames[::-1] for frames in stacks]
    reverse = _layout(stacks, counts, ["\0".join(f) for f in stacks], min_samples, diff)
    depth = max((b.depth for b in normal + reverse), default=0) + 1
    height = TOP + depth * FRAME_HEIGHT + BOTTOM
    config = {
        "total": total,
        "width": width,
        "pad": PAD,
        "frame": FRAME_HEIGHT,
        "top": TOP,
        "bottom": height - BOTTOM,
        "char": CHAR_WIDTH,
        "unit": unit,
        "diff": diff,
    }
    out = [
        '<?xml version="1.0" standalone="no"?>\n',
        f'<svg version="1.1" width="{width}" height="{height}" viewBox="0 0 {width} {height}"'
        f' xmlns="http://www.w3.org/2000/svg" class="hone-flamegraph"'
        f' data-config="{_xml(json.dumps(config))}">\n',
        f"<style>{_asset('flamegraph.css')}</style>\n",
        f'<rect class="bg" x="0" y="0" width="{width}" height="{height}"/>\n',
        f'<text class="title" x="{width / 2}" y="22">{_xml(title or "Flame graph")}</text>\n',
        f'<text class="subtitle" x="{width / 2}" y="38">{_xml(subtitle)}</text>\n',
        _buttons(width),
        f'<text class="details" x="{PAD}" y="{height - 10}"> </text>\n',
    ]
    for group, boxes, reversed_view in (("normal", normal, False), ("reversed", reverse, True)):
        style = ' style="display:none"' if reversed_view else ""
        colour = _diff_colours(boxes, total, before, reversed_view) if before is not None else None
        out.append(f'<g class="frames {group}"{style}>\n')
        out.extend(_box(b, total, inner, height, colour, modules) for b in boxes)
        out.append("</g>\n")
    out.append(
        '<g class="tip" style="display:none"><rect rx="3" ry="3"/><text> </text></g>\n'
        f"<script><![CDATA[\n{_asset('flamegraph.js')}\n]]></script>\n</svg>\n"
    )
    return "".join(out)


def _layout(
    stacks: list[list[str]], counts: list[int], keys: list[str], min_samples: float, paths: bool
) -> list[Box]:
    """Boxes of the merged stacks (in the order of their sort `keys`), root "all" first;
    narrow siblings merged (see the module docstring)."""
    order = sorted(range(len(keys)), key=keys.__getitem__)
    frames = [stacks[i] for i in order]
    cumulative = [0, *accumulate(counts[i] for i in order)]
    boxes: list[Box] = []

    def visit(lo: int, hi: int, depth: int, path: str) -> int:
        """Children (at `depth`) of the frame whose stacks are frames[lo:hi]; returns the
        frame's self samples."""
        own = 0
        if lo < hi and len(frames[lo]) == depth:  # the stack that ends at this frame
            own = cumulative[lo + 1] - cumulative[lo]
            lo += 1
        run_start = run_width = run_count = 0
        key = itemgetter(depth)
        while lo < hi:
            name = frames[lo][depth]
            end = bisect_right(frames, name, lo, hi, key=key)
            width = cumulative[end] - cumulative[lo]
            if width < min_samples:
                if not run_width:
                    run_start = cumulative[lo]
                run_width += width
                run_count += 1
            else:
                if run_width >= min_samples:
                    boxes.append(
                        Box(
                            f"{run_count} narrow frames",
                            depth + 1,
                            run_start,
                            run_width,
                            0,
                            run_count,
                        )
                    )
                run_width = run_count = 0
                child = f"{path};{name}" if paths else ""
                child_own = visit(lo, end, depth + 1, child)
                boxes.append(Box(name, depth + 1, cumulative[lo], width, child_own, 0, child))
            lo = end
        if run_width >= min_samples and run_width:
            boxes.append(
                Box(f"{run_count} narrow frames", depth + 1, run_start, run_width, 0, run_count)
            )
        return own

    root_own = visit(0, len(frames), 0, "")
    boxes.append(Box("all", 0, 0, cumulative[-1], root_own))
    boxes.sort(key=lambda b: (b.depth, b.x))
    return boxes


def _box(box: Box, total: int, inner: float, height: int, colour, modules: dict[str, str]) -> str:
    scale = inner / total if total else 0.0
    left = PAD + box.x * scale
    width = box.width * scale
    top = height - BOTTOM - (box.depth + 1) * FRAME_HEIGHT
    module = modules.get(box.name, "")
    if colour is not None:
        fill, extra = colour(box)
    else:
        fill, extra = _fill(box, module), ""
    if module:
        extra += f' data-m="{_xml(module.rsplit("/", 1)[-1])}"'
    label = _fit(box.name, width)
    # Most frames are too narrow for a label: no <text> then (the script adds one on zoom).
    text = f'<text x="{left + 3:.2f}" y="{top + FRAME_HEIGHT - 4}">{_xml(label)}</text>'
    return (
        f'<g data-n="{_xml(box.name)}" data-x="{box.x}" data-w="{box.width}"'
        f' data-d="{box.depth}"{extra}><rect x="{left:.2f}" y="{top}" width="{width:.2f}"'
        f' height="{FRAME_HEIGHT - 1}" fill="{fill}"/>{text if label else ""}</g>\n'
    )


_SPECIAL = re.compile(r'[&<>"\x00-\x08\x0b\x0c\x0e-\x1f]')


def _xml(text: str) -> str:
    """Text safe in XML content and double-quoted attributes (control characters dropped)."""
    if _SPECIAL.search(text) is None:
        return text
    text = re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", "", text)
    return escape(text, {'"': "&quot;"})


def _fit(name: str, width: float) -> str:
    chars = int((width - 6) / CHAR_WIDTH)
    if chars < 3:
        return ""
    return name if len(name) <= chars else name[: chars - 2] + ".."


def _fill(box: Box, module: str = "") -> str:
    """Warm colours from a stable hash of the name; kernel frames orange, JIT and inlined green,
    unknown and merged grey."""
    if box.merged or box.name.startswith("[unknown]"):
        return "rgb(190,190,190)"
    value = zlib.crc32(box.name.encode())
    if box.name.endswith("_[k]") or (module and is_kernel(module)):
        return f"rgb({220 + value % 30},{120 + (value >> 8) % 50},{40 + (value >> 16) % 30})"
    if box.name.endswith(("_[j]", "_[i]")):
        return f"rgb({60 + value % 40},{170 + (value >> 8) % 50},{60 + (value >> 16) % 40})"
    return f"rgb({205 + value % 50},{60 + (value >> 8) % 170},{(value >> 16) % 55})"


def _diff_colours(boxes: list[Box], total: int, before: dict[str, int], reversed_view: bool):
    """Fill and details of differential boxes: red to blue by the change of the frame's self
    share (the strongest change in the view is the deepest colour); the tooltip also gets the
    frame's total share in `before`. The root "all" stays white."""
    before_total = sum(before.values()) or 1
    own: dict[str, int] = {}  # "all;a;b" -> samples ending there, in `before`
    through: dict[str, int] = {}  # "all;a;b" -> samples through it, in `before`
    for key, count in before.items():
        frames = key.split(";")
        path = "all"
        for name in reversed(frames) if reversed_view else frames:
            path += ";" + name
            through[path] = through.get(path, 0) + count
        own[path] = own.get(path, 0) + count
    # In the reversed view a frame's width is already self time (of its leaf, through these
    # callers), so the change of the width is the one to show; in the normal view, of self.
    changes = {
        id(box): (box.width if reversed_view else box.self) / (total or 1)
        - (through if reversed_view else own).get("all" + box.path, 0) / before_total
        for box in boxes
        if not box.merged and box.depth > 0
    }
    strongest = max(map(abs, changes.values()), default=0.0) or 1.0

    def colour(box: Box) -> tuple[str, str]:
        if box.merged:
            return "rgb(210,210,210)", ""
        was = 1.0 if box.depth == 0 else through.get("all" + box.path, 0) / before_total
        change = changes.get(id(box), 0.0)
        fade = round(255 * (1 - min(1.0, abs(change) / strongest) * 0.7))
        fill = f"rgb(255,{fade},{fade})" if change > 0 else f"rgb({fade},{fade},255)"
        return fill, f' data-b="{was:.6f}" data-c="{change:.6f}"'

    return colour


def _asset(name: str) -> str:
    return (resources.files("hone.diagnose") / "assets" / name).read_text(encoding="utf-8")


def _buttons(width: int) -> str:
    items = [
        ("reset", "Reset zoom", PAD),
        ("search", "Search", width - 290),
        ("icicle", "Icicle", width - 225),
        ("reverse", "Reversed", width - 160),
        ("clear", "Clear", width - 70),
    ]
    parts = [
        f'<text class="button {cls}" x="{x}" y="{TOP - 8}">{label}</text>\n'
        for cls, label, x in items
    ]
    parts.append(f'<text class="matched" x="{width - PAD}" y="{TOP - 22}"> </text>\n')
    return "".join(parts)


def main(argv: list[str] | None = None) -> None:
    """`python -m hone.diagnose.flamegraph [FOLDED_FILE]`: the SVG on stdout (input from the
    file or stdin), like flamegraph.pl."""
    import sys

    from hone.diagnose.fold import parse_folded

    args = sys.argv[1:] if argv is None else argv
    source = args[0] if args else "stdin"
    try:
        text = Path(args[0]).read_text(errors="replace") if args else sys.stdin.read()
        folded = parse_folded(text, source)
    except (OSError, ValueError) as error:
        raise SystemExit(f"hone: {error}") from None
    sys.stdout.write(render(folded, title=f"Flame graph: {source}"))


if __name__ == "__main__":
    main()
