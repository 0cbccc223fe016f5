"""A small SVG line-and-dot chart, so reports need no JavaScript library and no network."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from hone.output import number


@dataclass
class Series:
    name: str
    points: Sequence[tuple[float, float]]
    colour: str
    line: bool = True
    dots: bool = True


def chart(
    series: Sequence[Series],
    *,
    title: str,
    x_label: str,
    y_label: str,
    band: tuple[float, float] | None = None,
    width: int = 720,
    height: int = 320,
) -> str:
    """Series over shared axes; `band` shades a y-range (the baseline's noise)."""
    pad_l, pad_r, pad_t, pad_b = 64, 16, 28, 40
    xs = [x for s in series for x, _ in s.points] or [0.0, 1.0]
    ys = [y for s in series for _, y in s.points] or [0.0, 1.0]
    if band:
        ys += list(band)
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y0, y1 = min(ys), max(ys) if max(ys) > min(ys) else min(ys) + 1
    y_ticks = ticks(y0, y1)
    y0, y1 = y_ticks[0], y_ticks[-1]

    def px(x: float) -> float:
        return pad_l + (x - x0) / (x1 - x0) * (width - pad_l - pad_r)

    def py(y: float) -> float:
        return height - pad_b - (y - y0) / (y1 - y0) * (height - pad_t - pad_b)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{escape(title)}" class="chart">',
        f'<text x="{width / 2}" y="18" text-anchor="middle" class="title">{escape(title)}</text>',
    ]
    if band:
        top, bottom = py(max(band)), py(min(band))
        parts.append(
            f'<rect x="{pad_l}" y="{top:.1f}" width="{width - pad_l - pad_r}" '
            f'height="{max(bottom - top, 1):.1f}" class="band">'
            "<title>baseline ± 2 SD</title></rect>"
        )
    for value in y_ticks:
        y = py(value)
        parts.append(
            f'<line x1="{pad_l}" x2="{width - pad_r}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
        )
        parts.append(
            f'<text x="{pad_l - 6}" y="{y + 4:.1f}" text-anchor="end">{number(value)}</text>'
        )
    for value in [x for x in ticks(x0, x1, whole=True) if x0 <= x <= x1]:
        parts.append(
            f'<text x="{px(value):.1f}" y="{height - pad_b + 16}" '
            f'text-anchor="middle">{number(value)}</text>'
        )
    parts.append(
        f'<text x="{width / 2}" y="{height - 6}" text-anchor="middle">{escape(x_label)}</text>'
    )
    parts.append(
        f'<text transform="translate(14 {height / 2}) rotate(-90)" '
        f'text-anchor="middle">{escape(y_label)}</text>'
    )
    for s in series:
        if s.line and len(s.points) > 1:
            path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in s.points)
            parts.append(
                f'<polyline points="{path}" fill="none" stroke="{s.colour}" stroke-width="2"/>'
            )
        if s.dots:
            for x, y in s.points:
                parts.append(
                    f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{s.colour}">'
                    f"<title>{escape(s.name)} #{x:.0f}: {number(y)}</title></circle>"
                )
    legend_x = pad_l + 8
    keys = [(s.name, f'fill="{s.colour}"') for s in series]
    keys += [("baseline ± 2 SD", 'class="band"')] if band else []
    for i, (name, fill) in enumerate(keys):
        y = pad_t + 12 + i * 16
        parts.append(f'<rect x="{legend_x}" y="{y - 9}" width="10" height="10" {fill}/>')
        parts.append(f'<text x="{legend_x + 14}" y="{y}">{escape(name)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def ticks(low: float, high: float, count: int = 5, whole: bool = False) -> list[float]:
    """About `count` round values (steps of 1, 2 or 5 times a power of ten) from at most
    `low` to at least `high`: axis labels people read at a glance (50,000 and 52,000, not
    5.04e+04 and 5.152e+04). `whole`: steps of at least 1 (trial numbers)."""
    raw = (high - low) / max(count - 1, 1) or 1.0
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    if whole:
        step = max(1.0, float(round(step)))
    first = math.floor(low / step + 1e-9)
    last = math.ceil(high / step - 1e-9)
    return [round(i * step, 12) for i in range(first, last + 1)]
