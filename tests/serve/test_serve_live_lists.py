"""Pages that draw their table again on a timer or a stream keep what the user holds in it: the
studies list (read again every 5 s) keeps each row's compare box, its tick, its focus and a click
pressed across the refresh, while new studies appear and gone ones leave; a study page (drawn
again with every trial) keeps its link back and a selection in its trial table; the machine page
(a sample a second) keeps a text selection in its process table. On a server of this module's
own, over studies and trials written straight into its database."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
from conftest import Server, start_server
from playwright.sync_api import Page, expect

from benchmarks.web import stop_server
from hone.space.space import SearchSpace
from hone.storage import StudyStore


@pytest.fixture(scope="module")
def lists(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`hone serve` over four studies of project `list`, none with a trial yet."""
    home = tmp_path_factory.mktemp("lists-home")
    store = StudyStore(f"sqlite:///{home / 'studies.db'}")
    for _ in range(4):
        store.create("list", {"engine": "random", "budget": 5})
    process, url = start_server(home, {})
    token = (home / "serve" / "token").read_text().strip()
    yield Server(url, token, home, {}, process)
    stop_server(process)


def store_of(server: Server) -> StudyStore:
    return StudyStore(f"sqlite:///{server.home / 'studies.db'}")


def test_a_refresh_keeps_the_compare_boxes_ticked_focused_and_pressed(
    page: Page, lists: Server
) -> None:
    page.goto(lists.url + "/")
    page.wait_for_selector("body[data-ready=studies]")
    first = page.get_by_label("compare list#1")
    second = page.get_by_label("compare list#2")
    first.check()
    for box in (first, second):  # a property only the element on screen now has
        box.evaluate("box => { box.honeMark = true; }")
    # A text selection in a row, and the mouse pressed on list#2's box, across the refresh
    created = page.locator("#studies tr[data-study='list#3'] td").nth(10)
    created_text = created.inner_text()
    assert created_text
    spot = second.bounding_box()
    assert spot is not None
    page.mouse.move(spot["x"] + spot["width"] / 2, spot["y"] + spot["height"] / 2)
    page.mouse.down()
    created.evaluate("td => getSelection().selectAllChildren(td)")

    # What the refresh will show: a study added, one gone, one finished
    store = store_of(lists)
    store.create("list", {"engine": "random"})  # list#5
    store.update(store.find("list#3"), state="finished")
    store.storage.delete_study(store.find("list#4").study_id)
    status = page.locator(".status-line")
    seen = status.inner_text()
    with page.expect_response(lambda r: r.url.endswith("/api/studies"), timeout=10_000):
        pass
    expect(status).not_to_have_text(seen)  # the refresh is drawn

    names = page.locator("#studies tbody tr").evaluate_all("rows => rows.map(r => r.dataset.study)")
    assert names == ["list#5", "list#3", "list#2", "list#1"]  # newest first
    expect(page.locator("#studies tr[data-study='list#3'] .state")).to_contain_text("finished")
    assert first.evaluate("box => box.honeMark === true && box.checked")
    assert second.evaluate("box => box.honeMark === true && document.activeElement === box")
    assert page.evaluate("() => getSelection().toString()") == created_text
    page.mouse.up()  # down on the box before the refresh, up on it after: a click
    expect(second).to_be_checked()

    # Sorting moves the rows and keeps their boxes; Compare takes the two ticked
    page.locator("#studies th[data-key=name] button").click()
    names = page.locator("#studies tbody tr").evaluate_all("rows => rows.map(r => r.dataset.study)")
    assert names == ["list#1", "list#2", "list#3", "list#5"]
    assert first.evaluate("box => box.honeMark === true && box.checked")
    assert second.evaluate("box => box.honeMark === true && box.checked")
    page.get_by_role("button", name="Compare selected").click()
    page.wait_for_selector("body[data-ready=compare]")
    assert page.evaluate("() => location.hash") == "#/compare/list%231,list%232"


def test_a_trial_arriving_keeps_the_study_pages_link_table_rows_and_chart_views(
    page: Page, lists: Server
) -> None:
    store = store_of(lists)
    study = store.create("trial", {"engine": "random", "budget": 5})
    for x in (1, 2):
        done = store.start_trial(study, SearchSpace({}), {"x": x}, "search")
        store.finish_trial(done, score=5.0 + x, metrics={"throughput": 5.0 + x})
    page.goto(lists.url + "/#/study/trial%231")
    page.wait_for_selector("body[data-ready=study]")
    rows = page.locator("#trials tbody tr")
    expect(rows).to_have_count(2)
    # The best-so-far line hidden from the curve's legend, and a range zoomed into
    page.locator("#trial-chart .u-legend .u-series", has_text="best so far").click()
    page.evaluate("() => window.honeCharts.time.setScale('x', {min: 0, max: 0.5})")
    back = page.locator(".crumbs a")
    back.evaluate("a => { a.honeMark = true; }")
    number = rows.first.locator("td").first
    number.evaluate("td => getSelection().selectAllChildren(td)")
    back.scroll_into_view_if_needed()  # the legend's click scrolled down to the chart
    spot = back.bounding_box()
    assert spot is not None
    page.mouse.move(spot["x"] + spot["width"] / 2, spot["y"] + spot["height"] / 2)
    page.mouse.down()  # focuses the link; released after the trial has redrawn the page

    store.start_trial(study, SearchSpace({}), {"x": 3}, "search")
    expect(rows).to_have_count(3)
    assert back.evaluate("a => a.honeMark === true && document.activeElement === a")
    assert page.evaluate("() => getSelection().toString()") == "0"
    charts = "({curve, time}) => [curve.data[0].length, curve.series[2].show, time.scales.x.max]"
    drawn = page.evaluate(
        f"() => ({charts})({{curve: window.honeCharts.trials, time: window.honeCharts.time}})"
    )
    assert drawn == [3, False, 0.5]  # the new trial drawn, the line still hidden, still zoomed
    page.mouse.up()
    page.wait_for_selector("body[data-ready=studies]")  # the click went through


def test_the_machine_pages_process_table_keeps_a_selection_across_samples(
    page: Page, lists: Server
) -> None:
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        page.goto(lists.url + "/#/machine")
        page.wait_for_selector("body[data-ready=machine]", timeout=15_000)
        row = page.locator(f"#processes tbody tr:has(td:text-is('{burner.pid}'))")
        expect(row).to_have_count(1, timeout=10_000)  # among the busiest
        row.locator("td").first.evaluate("td => getSelection().selectAllChildren(td)")
        live = page.locator("p.live")
        samples = int(live.get_attribute("data-samples") or 0)
        expect(live).not_to_have_attribute("data-samples", str(samples), timeout=5_000)
        expect(row).to_have_count(1)
        assert page.evaluate("() => getSelection().toString()") == str(burner.pid)
    finally:
        burner.kill()
        burner.wait()
