"""A small SVG line-and-dot chart, so reports need no JavaScript library and no network."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape


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
    margin = (y1 - y0) * 0.05
    y0, y1 = y0 - margin, y1 + margin

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
            "<title>baseline ± noise</title></rect>"
        )
    for i in range(5):
        value = y0 + (y1 - y0) * i / 4
        y = py(value)
        parts.append(
            f'<line x1="{pad_l}" x2="{width - pad_r}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
        )
        parts.append(f'<text x="{pad_l - 6}" y="{y + 4:.1f}" text-anchor="end">{value:.4g}</text>')
    for i in range(6):
        value = x0 + (x1 - x0) * i / 5
        parts.append(
            f'<text x="{px(value):.1f}" y="{height - pad_b + 16}" '
            f'text-anchor="middle">{value:.0f}</text>'
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
                    f"<title>{escape(s.name)} #{x:.0f}: {y:.4g}</title></circle>"
                )
    legend_x = pad_l + 8
    for i, s in enumerate(series):
        y = pad_t + 12 + i * 16
        parts.append(f'<rect x="{legend_x}" y="{y - 9}" width="10" height="10" fill="{s.colour}"/>')
        parts.append(f'<text x="{legend_x + 14}" y="{y}">{escape(s.name)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)
