"""Flame graph SVG of 100k unique stacks: hone's renderer against inferno-flamegraph, and how the
result behaves in a browser.

    python -m benchmarks.diagnose.flamegraph_speed [--stacks 100000] [--runs 5]

The input is synthetic folded text (benchmarks.diagnose.inputs.synthetic_folded: 100k distinct
stacks 4-40 frames deep over 4,000 C++-like names, heavy-tailed counts). Both render it to SVG
in alternation; hone's time is `render()` in process (the target: under 2 s) and also as a whole
process (`python -m hone.diagnose.flamegraph FILE`, which reads and parses the folded text
first). Then headless Chromium (Debian's, via Playwright) opens hone's SVG and times, in the
page, a zoom, a search and switching to the reversed view.

The peer is installed on first use with `cargo install inferno` (benchmarks only).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.diagnose.inputs import CACHE, peer, synthetic_folded, timed
from hone.diagnose.flamegraph import render
from hone.diagnose.fold import format_folded


def browser(svg: Path) -> dict[str, float]:
    """Milliseconds for load, zoom, search and the reversed view of `svg` in Chromium."""
    from playwright.sync_api import sync_playwright

    from benchmarks.web import launch

    with sync_playwright() as playwright:
        context = launch(playwright, tempfile.mkdtemp(prefix="hone-bench-"), 1220, 900)
        page = context.new_page()
        start = time.perf_counter()
        page.goto(svg.as_uri())
        page.wait_for_function("document.documentElement.honeFlamegraph !== undefined")
        figures = {"load": 1000 * (time.perf_counter() - start)}
        figures |= page.evaluate(
            """() => {
                const api = document.documentElement.honeFlamegraph;
                const time = (action) => {
                    const start = performance.now();
                    action();
                    document.documentElement.getBoundingClientRect();  // force layout
                    return performance.now() - start;
                };
                const name = [...document.querySelectorAll(".frames.normal > g")]
                    .find((g) => +g.getAttribute("data-d") === 3).getAttribute("data-n");
                return {
                    zoom: time(() => api.zoom(name)),
                    unzoom: time(() => api.zoom("")),
                    search: time(() => api.search("Handler1")),
                    reversed: time(() => api.toggleReversed()),
                    back: time(() => api.toggleReversed()),
                };
            }"""
        )
        context.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stacks", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    inferno = peer("inferno-flamegraph")
    CACHE.mkdir(parents=True, exist_ok=True)
    folded = synthetic_folded(args.stacks)
    source = CACHE / f"synthetic-{args.stacks}.folded"
    source.write_text(format_folded(folded))
    hone_svg = CACHE / "hone-flamegraph.svg"
    peer_svg = CACHE / "inferno-flamegraph.svg"
    hone_cmd = [sys.executable, "-m", "hone.diagnose.flamegraph", str(source)]
    peer_cmd = [inferno, str(source)]
    in_process, cpu, whole, theirs = [], [], [], []
    for _ in range(args.runs):
        start, start_cpu = time.perf_counter(), time.process_time()
        svg = render(folded)
        in_process.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        whole.append(timed(hone_cmd, hone_svg))
        theirs.append(timed(peer_cmd, peer_svg))
    frames = svg.count("<g data-n=")
    print(
        f"input: {len(folded):,} unique stacks, {sum(folded.values()):,} samples, "
        f"{source.stat().st_size / 1e6:.1f} MB folded"
    )
    print(
        f"hone's SVG: {len(svg) / 1e6:.1f} MB, {frames:,} frames drawn (both views); "
        f"inferno's: {peer_svg.stat().st_size / 1e6:.1f} MB"
    )
    print("| renderer | median | min | max |")
    print("|---|---|---|---|")
    for name, times in (
        ("hone render() in process, wall", in_process),
        ("hone render() in process, CPU", cpu),
        ("hone whole process (parse + render + write)", whole),
        ("inferno-flamegraph whole process", theirs),
    ):
        print(
            f"| {name} | {statistics.median(times):.2f} s | {min(times):.2f} s "
            f"| {max(times):.2f} s |"
        )
    ratios = [h / p for h, p in zip(whole, theirs, strict=True)]
    print(f"hone / inferno (whole processes), median of pairs: {statistics.median(ratios):.2f}x")
    figures = browser(hone_svg)
    print("Chromium, hone's SVG: " + ", ".join(f"{k} {v:.0f} ms" for k, v in figures.items()))


if __name__ == "__main__":
    main()
