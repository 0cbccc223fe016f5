"""The web UI in headless Chromium (Debian's /usr/bin/chromium driven by Playwright; no browser
download): the study list, a study's curve with the right number of points, sorting and
filtering the trial table, comparing studies, live updates, screen sizes. Screenshots are kept
under artifacts/serve/ for a person to look at."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from typing import Any

import pytest
from conftest import q, shot
from playwright.sync_api import Page, expect

from hone.output import percent_gain


def test_study_list_then_study_page_with_its_curve(page: Page, server: Any) -> None:
    page.goto(server.url + "/")
    page.wait_for_selector("body[data-ready=studies]")
    studies = server.get("/api/studies")
    rows = page.locator("#studies tbody tr")
    expect(rows).to_have_count(len(studies))
    beta = page.locator("#studies tbody tr[data-study='beta#1']")
    expect(beta).to_contain_text("finished")
    # its confirmed gain with the interval's two ends, as `hone studies` prints it
    row = next(s for s in studies if s["name"] == "beta#1")
    gain = percent_gain(row["gain"], row["gain_low"], row["gain_high"])
    expect(beta).to_contain_text(gain.replace("-", "\u2212"))
    shot(page, "studies-list")

    beta.get_by_role("link", name="beta#1").click()
    page.wait_for_selector("body[data-ready=study]")
    trials = server.get(f"/api/studies/{q('beta#1')}/trials")
    search = [t for t in trials if t["phase"] == "search"]
    scored = [t for t in search if t["score"] is not None]
    drawn = page.evaluate(
        "() => { const u = window.honeCharts.trials;"
        " return {x: u.data[0].length, points: u.data[1].filter(v => v !== null).length,"
        " series: u.series.map(s => s.label)}; }"
    )
    assert drawn["x"] == len(search) == 8
    assert drawn["points"] == len(scored) and 0 < len(scored) < len(search)
    assert {"trial score", "best so far", "baseline mean"} <= set(drawn["series"])
    # Every figure with its unit, as the project declares it (the page had none)
    assert page.evaluate("() => window.honeCharts.trials.axes[1].label") == "throughput (req/s)"
    heads = {
        "m:throughput": "throughput (req/s)",
        "m:latency": "latency (ms)",
        "score": "score (req/s)",
    }
    for key, label in heads.items():
        expect(page.locator(f"#trials thead th[data-key='{key}']")).to_have_text(label)
    baseline = page.locator("dl.facts dt:text-is('baseline') + dd")
    expect(baseline).to_contain_text(" req/s (σ, 3 runs")
    # The canvas really has ink on it, not an empty frame.
    inked = page.evaluate(
        "() => { const c = document.querySelector('#trial-chart canvas');"
        " const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
        " let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n; }"
    )
    assert inked > 2000
    expect(page.locator("#parallel polyline")).to_have_count(len(scored))
    expect(page.locator("#importance text").first).to_be_visible()
    expect(page.locator("#effects svg.effect")).to_have_count(2)  # x and mode
    expect(page.locator("#effects svg.effect polyline").first).to_be_visible()
    why = server.get(f"/api/studies/{q('beta#1')}")["attrs"]["why"]  # a profile, or why not
    expect(page.locator("#why")).to_contain_text(why.get("missing") or why["text"])
    shot(page, "study-page")


def test_sort_and_filter_the_trial_table(page: Page, server: Any) -> None:
    page.goto(server.url + f"/#/study/{q('beta#1')}")
    page.wait_for_selector("body[data-ready=study]")
    table = page.locator("#trials table")
    trials = server.get(f"/api/studies/{q('beta#1')}/trials")
    expect(table.locator("tbody tr")).to_have_count(len(trials))

    header = table.locator("th[data-key=score]")
    header.get_by_role("button").click()
    expect(header).to_have_attribute("aria-sort", "ascending")
    scores = sorted(t["score"] for t in trials if t["score"] is not None)
    first = float(table.locator("tbody tr").first.locator("td").nth(-4).inner_text())
    assert first == pytest.approx(scores[0], rel=1e-3)
    header.get_by_role("button").click()
    expect(header).to_have_attribute("aria-sort", "descending")
    first = float(table.locator("tbody tr").first.locator("td").nth(-4).inner_text())
    assert first == pytest.approx(scores[-1], rel=1e-3)
    shot(page, "trial-table-sorted")

    page.get_by_label("state").select_option("fail")
    failed = [t for t in trials if t["state"] == "fail"]
    expect(table.locator("tbody tr")).to_have_count(len(failed))
    expect(table.locator("tbody tr").first).to_contain_text("benchmark exited 4")
    page.get_by_label("state").select_option("")
    page.get_by_label("filter rows").fill("faster")
    expected = [t for t in trials if "faster" in str(t["config"]["mode"])]
    expect(table.locator("tbody tr")).to_have_count(len(expected))


def test_compare_two_studies_on_one_chart(page: Page, server: Any) -> None:
    page.goto(server.url + "/#/compare/")  # none named: said, not an empty chart and table
    page.wait_for_selector("body[data-ready=compare]")
    expect(page.locator("main .hint")).to_have_text(re.compile("^No study named: tick two "))
    expect(page.locator("main .chart")).to_have_count(0)
    page.goto(server.url + "/")
    page.wait_for_selector("body[data-ready=studies]")
    page.get_by_label("compare alpha#1").check()
    page.get_by_label("compare beta#1").check()
    page.get_by_role("button", name="Compare selected").click()
    page.wait_for_selector("body[data-ready=compare]")
    labels = page.evaluate("() => window.honeCharts.compare.series.map(s => s.label)")
    assert any(label.startswith("alpha#1") for label in labels)
    assert any(label.startswith("beta#1") for label in labels)
    dashes = page.evaluate("() => window.honeCharts.compare.series.slice(1).map(s => s.dash)")
    assert dashes[0] != dashes[1]  # told apart by line style, not colour alone
    shot(page, "compare")


def test_live_updates_and_stop_with_the_token(page: Page, server: Any) -> None:
    status, run = server.request("POST", "/api/studies", {"project": "live"})
    assert status == 202, run
    deadline = time.monotonic() + 30
    while not any(r["project"] == "live" for r in server.get("/api/studies")):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    name = [r["name"] for r in server.get("/api/studies") if r["project"] == "live"][-1]
    page.goto(server.url + f"/#/study/{q(name)}")
    page.wait_for_selector("body[data-ready=study]")
    rows = page.locator("#trials tbody tr")
    before = rows.count()
    # New trials appear without reloading the page, and the curve grows with them.
    page.wait_for_function(
        f"() => document.querySelectorAll('#trials tbody tr').length >= {before + 3}",
        timeout=20_000,
    )
    # The header's count follows the table (it stayed at the count the page was opened with).
    page.wait_for_function(
        "() => { const dd = [...document.querySelectorAll('dl.facts dt')]"
        ".find((dt) => dt.textContent === 'trials').nextElementSibling;"
        f" return parseInt(dd.textContent) >= {before + 3}; }}",
        timeout=10_000,
    )
    expect(page.locator(".live")).to_contain_text("search", timeout=20_000)
    # The progress line can name the search phase before its first trial's event has arrived.
    page.wait_for_function("() => window.honeCharts.trials.data[0].length >= 1", timeout=20_000)
    shot(page, "study-live")

    page.on("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Set token").click()
    page.get_by_label("token").fill(server.token)
    page.get_by_role("button", name="Use token").click()
    page.get_by_role("button", name="Stop").click()
    expect(page.locator("h1 .state")).to_contain_text("interrupted", timeout=30_000)
    assert server.get(f"/api/studies/{q(name)}")["state"] == "interrupted"
    assert (server.projects["live"] / "x.txt").read_text().strip() == "2"
    shot(page, "study-stopped")


@pytest.mark.parametrize(("width", "height"), [(390, 844), (1366, 768), (2560, 1440)])
def test_phone_laptop_and_large_monitor(context: Any, server: Any, width: int, height: int) -> None:
    page = context.new_page()
    page.set_viewport_size({"width": width, "height": height})
    page.goto(server.url + f"/#/study/{q('alpha#2')}")
    page.wait_for_selector("body[data-ready=study]")
    overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"page wider than a {width} px screen by {overflow} px"
    chart = page.evaluate("() => window.honeCharts.trials.width")
    assert chart > width * 0.5  # the chart uses the room it has
    # The token button and its dialog stay on screen (on a phone the header pushed the button
    # past the edge, and the dialog's field ran off it).
    button = page.get_by_role("button", name="Set token")
    box = button.bounding_box()
    assert box is not None and box["x"] + box["width"] <= width, box
    button.click()
    for part in ("#token-dialog", "#token-dialog input"):
        box = page.locator(part).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, (part, box)
    page.get_by_role("button", name="Close").click()
    shot(page, f"study-{width}x{height}")
    page.close()


def test_machine_page_updates_live(page: Page, server: Any) -> None:
    page.goto(server.url + "/#/machine")
    page.wait_for_selector("body[data-ready=machine]", timeout=15_000)
    live = page.locator(".live")
    first = int(live.get_attribute("data-samples") or 0)
    # A busy process shows up in the CPU gauge within a few samples.
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        page.wait_for_function(
            "() => Number(document.getElementById('gauge-cpu').dataset.value) > 30",
            timeout=15_000,
        )
    finally:
        burner.kill()
        burner.wait()
    page.wait_for_function(
        f"() => Number(document.querySelector('.live').dataset.samples) > {first + 1}"
    )
    later = int(live.get_attribute("data-samples") or 0)
    assert (page.locator("#gauge-cpu .gauge-number").text_content() or "").endswith("%")
    drawn = page.evaluate("() => window.honeCharts['machine-utilisation'].data[0].length")
    assert drawn >= later > first + 1
    shot(page, "machine")


@pytest.mark.slow
def test_machine_page_names_the_workload_and_the_cpu_bottleneck(page: Page, server: Any) -> None:
    page.goto(server.url + "/#/machine")
    page.wait_for_selector("body[data-ready=machine]", timeout=15_000)
    page.select_option("select[aria-label='analysis duration']", "5")
    # Both cores busy: the CPU is the saturated resource whatever else the machine does.
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(3)]
    try:
        # the API's answer is read from the page's own request: one analysis, checked twice
        with page.expect_response(lambda r: "/api/analysis?" in r.url, timeout=60_000) as sent:
            page.locator("#analyze-button").click()
        expect(page.locator("#workload-class")).not_to_be_empty(timeout=60_000)
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    analysis = sent.value.json()
    classes = analysis["probabilities"]
    assert (analysis["model"], analysis["hardware"]) == ("default", False)  # this VM counts none
    assert abs(sum(classes.values()) - 1.0) < 1e-6
    assert page.locator("#workload-class").text_content() in classes
    expect(page.locator("#workload-bottleneck")).to_have_text("CPU")
    expect(page.locator("#analysis tbody tr").first).to_contain_text("CPU")
    expect(page.locator("#workload-model")).to_have_text(
        "model: default, without hardware counters"
    )
    shot(page, "machine-analysis")
