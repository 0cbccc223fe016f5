"""Back, forward and reload in headless Chromium: each page comes back as itself (its heading,
its data), and a page whose data arrives after the user has left it never writes into the page
they went to."""

from __future__ import annotations

from typing import Any

from conftest import q
from playwright.sync_api import Page, Route, expect


def shows(page: Page, ready: str, heading: str) -> None:
    """The page `ready` is shown, alone: one heading, this one."""
    page.wait_for_selector(f"body[data-ready={ready}]", timeout=20_000)
    expect(page.locator("#main h1")).to_have_count(1)
    expect(page.locator("#main h1")).to_contain_text(heading)


def test_back_forward_and_reload_on_every_page(page: Page, server: Any) -> None:
    page.goto(server.url + "/#/")
    shows(page, "studies", "Studies")
    page.locator(f"#studies a[href='#/study/{q('alpha#1')}']").click()
    shows(page, "study", "alpha#1")
    page.goto(server.url + f"/#/compare/{q('alpha#1')},{q('beta#1')}")
    shows(page, "compare", "Compare")
    page.get_by_role("link", name="Machine").click()
    shows(page, "machine", "Machine")
    page.get_by_role("link", name="Diagnoses").click()
    shows(page, "diagnoses", "Diagnoses")

    page.go_back()
    shows(page, "machine", "Machine")
    expect(page.locator("nav a[aria-current]")).to_have_text("Machine")
    page.go_back()
    shows(page, "compare", "Compare")
    expect(page.locator("#compare-chart, .chart").first).to_be_visible()
    page.go_back()
    shows(page, "study", "alpha#1")
    page.go_back()
    shows(page, "studies", "Studies")
    page.go_forward()
    shows(page, "study", "alpha#1")
    page.reload()
    shows(page, "study", "alpha#1")
    expect(page.locator("#trials tbody tr").first).to_be_visible()
    page.go_forward()
    shows(page, "compare", "Compare")
    page.reload()
    shows(page, "compare", "Compare")
    page.go_forward()
    shows(page, "machine", "Machine")
    page.reload()
    shows(page, "machine", "Machine")
    page.go_forward()
    shows(page, "diagnoses", "Diagnoses")
    page.reload()
    shows(page, "diagnoses", "Diagnoses")


def test_a_page_left_before_its_data_came_stays_away(page: Page, server: Any) -> None:
    """The study's answer is held until the user has gone back to the list: it must not be
    drawn under the list, nor mark the page ready as a study."""
    page.goto(server.url + "/#/")
    shows(page, "studies", "Studies")
    held: list[Route] = []
    page.route("**/api/studies/alpha*", lambda route: held.append(route))
    page.locator(f"#studies a[href='#/study/{q('alpha#1')}']").click()
    while not held:
        page.wait_for_timeout(50)
    page.go_back()
    shows(page, "studies", "Studies")
    for route in held:
        route.continue_()
    page.unroute("**/api/studies/alpha*")
    page.wait_for_timeout(1500)  # the study's data and its event stream have come by now
    shows(page, "studies", "Studies")
    expect(page.locator("#trials")).to_have_count(0)
    assert page.evaluate("document.body.dataset.ready") == "studies"
