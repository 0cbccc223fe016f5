"""Flame graph SVGs: the drawn geometry, narrow-frame merging, differential colours, and the
script's hover, search, zoom, icicle and reversed views in headless Chromium (Debian's, via
Playwright, as in the serve tests)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, sync_playwright

from benchmarks.web import launch
from hone.diagnose.flamegraph import diff_flamegraph_svg, flamegraph_svg, render
from hone.diagnose.profile import Profile

NS = {"s": "http://www.w3.org/2000/svg"}
FOLDED = {
    "app;main;parse;read": 20,
    "app;main;parse": 10,
    "app;main;compute;kernel_loop": 60,
    "app;main;compute;log_write;write": 10,
}


def frames(svg: str, group: str = "normal") -> dict[str, list[dict[str, float]]]:
    root = ET.fromstring(svg.encode())
    found: dict[str, list[dict[str, float]]] = {}
    for g in root.findall(f"s:g[@class='frames {group}']/s:g", NS):
        rect = g.find("s:rect", NS)
        assert rect is not None
        found.setdefault(g.get("data-n", ""), []).append(
            {
                "x": float(rect.get("x", 0)),
                "w": float(rect.get("width", 0)),
                "y": float(rect.get("y", 0)),
                "samples": int(g.get("data-w", 0)),
                "depth": int(g.get("data-d", 0)),
            }
        )
    return found


def test_geometry_follows_the_counts() -> None:
    svg = render(FOLDED, width=1020)  # 1000 px inside the 10 px margins
    drawn = frames(svg)
    assert drawn["all"][0]["w"] == pytest.approx(1000)
    assert drawn["main"][0]["samples"] == 100
    assert drawn["compute"][0]["w"] == pytest.approx(700)
    assert drawn["parse"][0]["w"] == pytest.approx(300)
    # Siblings in name order, children on top of (above) their parent.
    assert drawn["compute"][0]["x"] < drawn["parse"][0]["x"]
    assert drawn["read"][0]["y"] < drawn["parse"][0]["y"]
    assert drawn["read"][0]["depth"] == 4
    # The reversed view merges by leaf: kernel_loop is a root-level frame there, 60 % wide.
    reverse = frames(svg, "reversed")
    assert reverse["kernel_loop"][0]["depth"] == 1
    assert reverse["kernel_loop"][0]["w"] == pytest.approx(600)
    assert reverse["parse"][0]["samples"] == 10  # parse as a leaf (its self time)
    assert sum(f["samples"] for f in reverse["parse"]) == 30  # and parse under read


def test_narrow_frames_are_merged_into_one_block() -> None:
    folded = {f"app;main;tiny_{i:04d}": 1 for i in range(2000)}
    folded["app;main;big"] = 2000
    drawn = frames(render(folded, width=1020, min_width=2.0))
    assert "big" in drawn
    assert not any(name.startswith("tiny_") for name in drawn)
    blocks = [name for name in drawn if name.endswith("narrow frames")]
    assert blocks == ["2000 narrow frames"]
    assert drawn[blocks[0]][0]["w"] == pytest.approx(500)


def test_names_are_escaped_and_the_svg_is_well_formed() -> None:
    svg = render({'app;operator<<(std::ostream&, "x");f': 5})
    names = frames(svg)
    assert 'operator<<(std::ostream&, "x")' in names


def test_differential_colours() -> None:
    before = Profile.from_folded({"app;main;a": 50, "app;main;b": 50})
    after = Profile.from_folded({"app;main;a": 80, "app;main;b": 20})
    root = ET.fromstring(diff_flamegraph_svg(before, after).encode())
    fills = {}
    for g in root.findall("s:g[@class='frames normal']/s:g", NS):
        fills[g.get("data-n")] = (
            g.find("s:rect", NS).get("fill"),
            g.get("data-b"),
            g.get("data-c"),
        )
    grew, was_a, change_a = fills["a"]
    shrank, was_b, change_b = fills["b"]
    assert float(was_b) == pytest.approx(0.5)
    assert grew.startswith("rgb(255,") and not grew.endswith(",255)")
    assert shrank.endswith(",255)") and not shrank.startswith("rgb(255,")
    assert float(was_a) == pytest.approx(0.5) and float(change_a) == pytest.approx(0.3)
    assert float(change_b) == pytest.approx(-0.3)
    # The reversed view: a and b are leaves at depth 1, coloured the same way.
    for g in root.findall("s:g[@class='frames reversed']/s:g", NS):
        if g.get("data-n") in ("a", "b") and g.get("data-d") == "1":
            assert float(g.get("data-c")) == pytest.approx(0.3 if g.get("data-n") == "a" else -0.3)
            assert float(g.get("data-b")) == pytest.approx(0.5)


# ---- in a browser --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as playwright:
        context = launch(playwright, str(profile), width=1300, height=500)
        yield context
        context.close()


@pytest.fixture
def page(context: Any, tmp_path: Path) -> Iterator[Page]:
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    path = tmp_path / "flame.svg"
    path.write_text(flamegraph_svg(Profile.from_folded(FOLDED), title="test"))
    page.goto(path.as_uri())
    yield page
    page.close()
    assert not errors, errors


def rect(page: Page, name: str, view: str = "normal") -> dict[str, float]:
    return page.evaluate(
        """([name, view]) => {
            const g = [...document.querySelectorAll(`.frames.${view} > g`)]
                .find((g) => g.getAttribute("data-n") === name);
            const r = g.querySelector("rect");
            return {x: +r.getAttribute("x"), w: +r.getAttribute("width"),
                    y: +r.getAttribute("y"), shown: g.style.display !== "none",
                    hit: g.classList.contains("hit"), label: g.querySelector("text").textContent};
        }""",
        [name, view],
    )


@pytest.mark.slow
def test_hover_search_zoom_and_views(page: Page) -> None:
    compute = rect(page, "compute")
    page.mouse.move(compute["x"] + 5, compute["y"] + 5)
    assert page.text_content(".details") == "compute (70 samples, 70 %)"
    assert page.is_visible(".tip")
    assert "compute" in page.text_content(".tip text")

    page.evaluate("document.documentElement.honeFlamegraph.search('^(read|write)$')")
    assert rect(page, "read")["hit"] and rect(page, "write")["hit"]
    assert not rect(page, "parse")["hit"]
    assert page.text_content(".matched") == "Matched: 30 %"

    page.mouse.click(compute["x"] + 5, compute["y"] + 5)  # zoom on compute
    zoomed = rect(page, "compute")
    assert zoomed["w"] == pytest.approx(1180, abs=1)
    assert rect(page, "kernel_loop")["w"] == pytest.approx(1180 * 60 / 70, abs=1)
    assert not rect(page, "parse")["shown"]
    assert rect(page, "main")["w"] == pytest.approx(1180, abs=1)  # an ancestor spans it all
    page.click(".button.reset")
    assert rect(page, "compute")["w"] == pytest.approx(compute["w"], abs=0.01)
    assert rect(page, "parse")["shown"]

    page.click(".button.icicle")
    assert rect(page, "read")["y"] > rect(page, "parse")["y"]  # root on top now
    page.click(".button.icicle")

    page.click(".button.reverse")
    assert page.is_hidden(".frames.normal") and page.is_visible(".frames.reversed")
    leaf = rect(page, "kernel_loop", "reversed")
    assert leaf["w"] == pytest.approx(1180 * 0.6, abs=1)
    assert leaf["label"] == "kernel_loop"


@pytest.mark.slow
def test_zoom_labels_a_frame_drawn_without_one(context: Any, tmp_path: Path) -> None:
    path = tmp_path / "narrow.svg"
    path.write_text(render({"app;main;big": 990, "app;main;small;leaf": 1}))
    assert "small</text>" not in path.read_text()  # 1.2 px wide: no label, no <text>
    page = context.new_page()
    page.goto(path.as_uri())
    page.evaluate("document.documentElement.honeFlamegraph.zoom('small')")
    assert rect(page, "small")["label"] == "small"
    assert rect(page, "leaf")["w"] == pytest.approx(1180, abs=1)
    page.close()


@pytest.mark.slow
def test_two_graphs_inline_in_one_html_page(context: Any, tmp_path: Path) -> None:
    """As the diagnose report embeds them: each script drives its own graph."""
    first = render({"a;one": 3, "a;two": 1}, title="first")
    second = render({"b;three": 1, "b;four": 1}, title="second")
    body = "".join(svg[svg.index("<svg") :] for svg in (first, second))
    page_file = tmp_path / "report.html"
    page_file.write_text(f"<!doctype html><html><body>{body}</body></html>")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(page_file.as_uri())
    graphs = page.locator("svg.hone-flamegraph")
    assert graphs.count() == 2
    four = graphs.nth(1).locator(".frames.normal g[data-n='four'] rect")
    four.hover()
    assert graphs.nth(1).locator(".details").text_content() == "four (1 samples, 50 %)"
    assert graphs.nth(0).locator(".details").text_content() == " "
    four.click()  # zoom in the second graph only
    assert float(four.get_attribute("width")) == pytest.approx(1180, abs=1)
    one = graphs.nth(0).locator(".frames.normal g[data-n='one'] rect")
    assert float(one.get_attribute("width")) == pytest.approx(1180 * 0.75, abs=1)
    page.close()
    assert not errors, errors


def test_command_line_renders_folded_text(tmp_path: Path) -> None:
    import subprocess
    import sys

    source = tmp_path / "in.folded"
    source.write_text("".join(f"{k} {v}\n" for k, v in FOLDED.items()))
    result = subprocess.run(
        [sys.executable, "-m", "hone.diagnose.flamegraph", str(source)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert frames(result.stdout)["main"][0]["samples"] == 100
    bad = tmp_path / "bad.folded"
    bad.write_text("a;b x\n")
    failed = subprocess.run(
        [sys.executable, "-m", "hone.diagnose.flamegraph", str(bad)], capture_output=True, text=True
    )
    assert failed.returncode != 0 and "bad.folded:1" in failed.stderr
    assert "Traceback" not in failed.stderr


def test_profile_graph_names_modules_and_marks_the_kernel() -> None:
    fixtures = Path(__file__).parent / "fixtures"
    profile = Profile.from_perf_script((fixtures / "system.perf.txt").read_bytes())
    root = ET.fromstring(flamegraph_svg(profile).encode())
    kernel = user = 0
    for g in root.findall("s:g[@class='frames normal']/s:g", NS):
        fill = g.find("s:rect", NS).get("fill")
        red, green, blue = (int(v) for v in fill[4:-1].split(","))
        if g.get("data-m") == "[kernel.kallsyms]":
            kernel += 1
            assert red >= 220 and 120 <= green < 170 and 40 <= blue < 70, fill
        elif g.get("data-m") == "libpython3.11.so.1.0":
            user += 1
            assert red >= 205 and blue < 55, fill
    assert kernel >= 5 and user >= 1
