"""A live `hone serve` and headless Chromium, for hone's page tests and page benchmarks.

The browser is Debian's own (/usr/bin/chromium) driven by Playwright, never a browser download,
on a fresh profile; the server is a real `python -m hone serve` process on a free loopback port."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
#: Quiet and deterministic: no GPU, no background traffic, nothing that phones out.
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def launch(playwright: Any, profile: str, width: int = 1440, height: int = 900) -> Any:
    """A persistent Chromium context on a new user-data-dir `profile`."""
    return playwright.chromium.launch_persistent_context(
        profile,
        executable_path=CHROMIUM,
        args=list(CHROMIUM_ARGS),
        viewport={"width": width, "height": height},
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(home: Path, *args: str, cwd: Path | None = None) -> tuple[subprocess.Popen, str]:
    """`hone serve` on a free port with HONE_HOME=home; returns once it answers /api/about."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "hone", "serve", "--port", str(port), *args],
        cwd=cwd,
        env={**os.environ, "HONE_HOME": str(home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"hone serve exited: {process.stdout.read()}")  # type: ignore[union-attr]
        try:
            with urllib.request.urlopen(url + "/api/about", timeout=2):
                return process, url
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("hone serve did not answer in 30 s")


def stop_server(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def study_page_loads(url: str, study: str, repeats: int, timeout_ms: int = 120_000) -> list[dict]:
    """Each fresh tab's study page: ms from navigation to drawn, the bytes of /trials on the
    wire and the rows of the trial table."""
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="hone-bench-chromium-")
    target = f"{url}/#/study/{urllib.request.quote(study, safe='')}"
    found = []
    try:
        with sync_playwright() as playwright:
            context = launch(playwright, profile)
            for _ in range(repeats):
                page = context.new_page()
                page.goto(target)
                page.wait_for_selector("body[data-ready=study]", timeout=timeout_ms)
                drawn, wire = page.evaluate(
                    """() => [performance.getEntriesByName('hone-study-drawn')[0].startTime,
                        performance.getEntriesByType('resource')
                            .find((e) => e.name.endsWith('/trials')).transferSize]"""
                )
                rows = page.locator("#trials tbody tr").count()
                found.append({"drawn_ms": float(drawn), "wire": int(wire), "rows": rows})
                page.close()
            context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    return found
