"""A wrong token typed into the UI, in headless Chromium: every state-changing action (stop,
resume, restore, profile apply) says the token is wrong, asks for it again in the same dialog
and, once it is right, does what was asked without the user starting over; closing the dialog
leaves the action where it was, nothing changed."""

from __future__ import annotations

import time
from typing import Any

from conftest import q
from playwright.sync_api import Page, expect

WRONG = "not-the-token-at-all-0123456789"


def type_token(page: Page, value: str) -> None:
    page.locator("#token-button").click()
    page.get_by_label("token").fill(value)
    page.get_by_role("button", name="Use token").click()


def refused_then_retyped(page: Page, right: str) -> None:
    """The dialog is back, saying the token is wrong; the right one sends the action again."""
    dialog = page.locator("#token-dialog")
    expect(page.locator("#token-problem")).to_be_visible()
    expect(page.locator("#token-problem")).to_contain_text("wrong")
    page.get_by_label("token").fill(right)
    page.get_by_role("button", name="Use token").click()
    expect(dialog).to_be_hidden()


def wait_for_state(server: Any, name: str, state: str) -> None:
    deadline = time.monotonic() + 30
    while server.get(f"/api/studies/{q(name)}")["state"] != state:
        assert time.monotonic() < deadline, state
        time.sleep(0.2)


def test_stop_resume_restore_with_a_wrong_token_then_the_right_one(page: Page, server: Any) -> None:
    def slow() -> set[str]:
        return {r["name"] for r in server.get("/api/studies") if r["project"] == "slow"}

    earlier = slow()  # other tests of this server may have run the project already
    status, run = server.request("POST", "/api/studies", {"project": "slow"})
    assert status == 202, run
    deadline = time.monotonic() + 30
    while not slow() - earlier:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    (name,) = slow() - earlier
    while not server.get(f"/api/studies/{q(name)}").get("alive"):  # its pid recorded: Stop shown
        assert time.monotonic() < deadline
        time.sleep(0.1)
    page.on("dialog", lambda dialog: dialog.accept())  # the "Stop this study?" confirmations
    page.goto(server.url + f"/#/study/{q(name)}")
    page.wait_for_selector("body[data-ready=study]")
    type_token(page, WRONG)
    status = page.locator("#action-status")
    # Every trial redraws the header; a button replaced by then would lose a click pressed
    # across the redraw (the press on the old button, the release on the new one).
    stop = page.get_by_role("button", name="Stop").element_handle()
    trials = page.locator("dl.facts dd").nth(2)
    seen = trials.inner_text()
    expect(trials).not_to_have_text(seen, timeout=15_000)
    assert stop.evaluate("button => button.isConnected")

    page.get_by_role("button", name="Stop").click()
    refused_then_retyped(page, server.token)
    expect(page.locator("h1 .state")).to_contain_text("interrupted", timeout=30_000)
    expect(status).to_have_text("Stop: done", timeout=30_000)  # its process has exited
    wait_for_state(server, name, "interrupted")

    type_token(page, WRONG)
    page.get_by_role("button", name="Resume").click()
    refused_then_retyped(page, server.token)
    expect(page.locator("h1 .state")).to_contain_text("running", timeout=30_000)
    page.get_by_role("button", name="Stop").click()  # the right token is kept: no dialog now
    expect(status).to_have_text("Stop: done", timeout=30_000)
    expect(page.locator("#token-dialog")).to_be_hidden()

    type_token(page, WRONG)
    page.get_by_role("button", name="Restore knobs").click()
    refused_then_retyped(page, server.token)
    expect(status).to_have_text("Restore knobs: done")
    assert (server.projects["slow"] / "x.txt").read_text().strip() == "2"


def test_profile_apply_with_a_wrong_token_given_up_changes_nothing(page: Page, server: Any) -> None:
    before = server.get("/api/profiles/active")["name"]
    page.goto(server.url + "/#/machine")
    page.wait_for_selector("body[data-ready=machine]", timeout=15_000)
    type_token(page, WRONG)
    page.locator("#profile").get_by_role("button", name="Apply").click()
    expect(page.locator("#token-problem")).to_be_visible()
    expect(page.locator("#token-problem")).to_contain_text("wrong")
    page.get_by_role("button", name="Close").click()
    expect(page.locator("#profile [role=status]")).to_have_text("Apply: wrong token")
    expect(page.locator("#profile").get_by_role("button", name="Apply")).to_be_enabled()
    assert server.get("/api/profiles/active")["name"] == before

    page.select_option("select[aria-label='analysis duration']", "5")
    page.locator("#analyze-button").click()
    apply = page.get_by_role("button", name="Apply it")
    expect(apply).to_be_visible(timeout=60_000)
    apply.click()
    expect(page.locator("#token-problem")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#workload-applied")).to_have_text("not applied: wrong token")
    expect(apply).to_be_visible()  # still there for another try with the right token
    assert server.get("/api/profiles/active")["name"] == before
