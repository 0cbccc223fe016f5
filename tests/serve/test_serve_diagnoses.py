"""The diagnosis API and pages over real `hone diagnose` runs of two C programs with known
profiles: hot_split (hot_work ~70 % of the CPU, cold_work ~30 %) and hot_tree (a wide tree), and
over a real `hone diagnose --system` run with a known busy program among the machine's."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, Server, shared_chromium
from forked_hone import run_hone
from playwright.sync_api import Browser, Page, expect

from benchmarks.diagnose.inputs import build
from benchmarks.web import start_server, stop_server

ARTIFACTS = ROOT / "artifacts" / "serve"


@pytest.fixture(scope="module")
def chromium() -> Browser:
    """The directory's Chromium; each test has a context of its own (nothing kept)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return shared_chromium()


@contextmanager
def browser(
    chromium: Browser, width: int = 1440, height: int = 900
) -> Iterator[tuple[Page, list[str]]]:
    """A page in a fresh context, and the errors its scripts raise or log while it is open."""
    context = chromium.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    yield page, errors
    context.close()


def diagnose(home: Path, *command: str) -> None:
    done = run_hone(
        "diagnose", "--no-locks", "--", *command, env={**os.environ, "HONE_HOME": str(home)},
        cwd=Path.cwd(), timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def diagnoses(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, list[str]]]:
    """A server over two real diagnoses: [hot_tree (newest), hot_split]."""
    home = tmp_path_factory.mktemp("diagnose-home")
    folder = tmp_path_factory.mktemp("diagnose-bin")
    diagnose(home, str(build("hot_split", folder)), "1.5")
    diagnose(home, str(build("hot_tree", folder)), "1.5")
    names = sorted((p.name for p in (home / "diagnoses").iterdir()), reverse=True)
    assert len(names) == 2, names
    process, url = start_server(home, cwd=ROOT)
    try:
        yield Server(url, "", home, {}, process), names
    finally:
        stop_server(process)


def by_name(rows: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(r for r in rows if r["name"] == name)


@pytest.mark.slow
def test_list_detail_and_tables_of_real_diagnoses(diagnoses: tuple[Server, list[str]]) -> None:
    server, (tree, split) = diagnoses
    listed = server.get("/api/diagnoses")
    assert [d["name"] for d in listed] == [tree, split]
    assert all(d["samples"] > 50 and d["finding"]["headline"] for d in listed)

    detail = server.get(f"/api/diagnoses/{split}")
    hot = by_name(detail["functions"]["self"], "hot_work")
    cold = by_name(detail["functions"]["self"], "cold_work")
    assert 0.55 < hot["self"] < 0.85 and 0.15 < cold["self"] < 0.45
    assert hot["module"].endswith("hot_split")
    assert detail["functions"]["self"][0]["name"] == "hot_work"  # bottom-up: biggest self first
    assert by_name(detail["functions"]["total"], "main")["total"] > 0.95  # top-down: main holds all
    # libc (which calls main) is in nearly every stack too: by total, the two tie near 1
    assert detail["modules"]["self"][0]["name"] == "hot_split"
    assert by_name(detail["modules"]["total"], "hot_split")["total"] > 0.95
    assert "hot_work" in detail["summary"]
    assert any(t["comm"] == "hot_split" for t in detail["threads"])
    assert detail["topdown"]["available"] is False and detail["topdown"]["evidence"]
    assert any(not c["available"] for c in detail["capabilities"]["items"])  # kprobes, PMU
    assert detail["offcpu"]["runqueue"] is not None

    flame = server.get(f"/api/diagnoses/{split}/flame")
    assert sum(flame["folded"].values()) == detail["samples"]
    assert any(stack.endswith(";hot_work") for stack in flame["folded"])


def test_the_remote_servers_diagnoses_are_listed(
    diagnoses: tuple[Server, list[str]], hone_cli
) -> None:
    """`hone remote diagnoses`: the list of the server's API, and for people the same rows as
    `hone diagnoses` on that machine."""
    server, (tree, split) = diagnoses
    remote = ("remote", "--server", server.url, "diagnoses")
    assert json.loads(hone_cli(*remote, "--json").stdout) == server.get("/api/diagnoses")
    text = hone_cli(*remote).stdout
    rows = [line for line in text.splitlines() if tree in line or split in line]
    assert [tree in rows[0], split in rows[1]] == [True, True]
    headline = server.get("/api/diagnoses")[1]["finding"]["headline"]
    assert headline in rows[1] and "hot_split" in rows[1]


@pytest.mark.slow
def test_flame_svg_compare_and_report(diagnoses: tuple[Server, list[str]]) -> None:
    server, (tree, split) = diagnoses
    for query in ("", "?view=offcpu", f"?base={split}"):
        with urllib.request.urlopen(f"{server.url}/api/diagnoses/{tree}/flame.svg{query}") as r:
            assert r.headers["Content-Type"].startswith("image/svg+xml")
            assert r.headers["Content-Security-Policy"].startswith("sandbox")
            drawing = r.read().decode()
            assert drawing.count("<g ") > 10 and "hot_tree" in drawing, query
    moved = server.get(f"/api/diagnoses/{tree}/compare?base={split}")
    hot = by_name(moved["functions"], "hot_work")
    assert hot["before"] > 0.5 and hot["after"] == 0.0  # hot_tree has no hot_work
    assert moved["modules"][0]["name"] in {"hot_split", "hot_tree"}
    with urllib.request.urlopen(f"{server.url}/api/diagnoses/{split}/report") as response:
        policy = response.headers["Content-Security-Policy"]
        assert policy.startswith("sandbox allow-scripts")  # its script runs in an opaque origin
        assert "hot_work" in response.read().decode()


@pytest.mark.parametrize(
    "name", ["..", "...", "../../etc/passwd", ".hidden", "nope", "a/../../b", "%2e%2e"]
)
def test_names_never_leave_the_diagnoses_folder(
    diagnoses: tuple[Server, list[str]], name: str
) -> None:
    server, _ = diagnoses
    quoted = urllib.parse.quote(name, safe="")
    for tail in ("", "/flame", "/flame.svg", "/report"):
        status, _ = server.request("GET", f"/api/diagnoses/{quoted}{tail}")
        assert status == 404, (name, tail, status)


@pytest.mark.slow
def test_diagnosis_page_flame_graph_zoom_search_and_diff(
    diagnoses: tuple[Server, list[str]], chromium: Browser
) -> None:
    server, (tree, split) = diagnoses
    with browser(chromium) as (page, errors):
        page.goto(f"{server.url}/#/diagnoses")
        page.wait_for_selector("body[data-ready=diagnoses]")
        expect(page.locator("#diagnoses tbody tr")).to_have_count(2)
        page.locator(f"#diagnoses a[href$='{split}']").click()
        page.wait_for_selector("body[data-ready=diagnosis]", timeout=30_000)
        expect(page.locator("#verdict strong").first).not_to_be_empty()
        expect(page.locator("#threads tbody tr").first).to_contain_text("hot_split")
        page.screenshot(path=str(ARTIFACTS / "diagnosis.png"), full_page=True)

        frames = page.locator("#flame svg .frames.normal > g")
        # hot_work under run_round; a sample taken in its prologue, before its frame exists,
        # skips run_round and draws a second, narrow hot_work box: the widest is the one
        boxes = page.locator("#flame svg .frames.normal > g[data-n=hot_work]")
        expect(boxes.first).to_be_visible()
        widths = [float(w) for w in boxes.evaluate_all("gs => gs.map(g => g.dataset.w)")]
        hot = boxes.nth(widths.index(max(widths)))
        full = float(
            page.locator("#flame svg .frames.normal > g[data-n=all] rect").get_attribute("width")
        )
        before = float(hot.locator("rect").get_attribute("width"))
        assert 0.5 * full < before < 0.9 * full
        hot.click()  # zoom: hot_work now spans the whole width
        after = float(hot.locator("rect").get_attribute("width"))
        assert after == pytest.approx(full, rel=0.01), (before, after, full)
        assert frames.count() > 5
        page.screenshot(path=str(ARTIFACTS / "diagnosis-zoomed.png"))

        page.once("dialog", lambda dialog: dialog.accept("cold_work"))
        page.locator("#flame svg .button.search").click()
        expect(page.locator("#flame svg .matched")).to_contain_text("%")
        expect(page.locator("#flame svg g.hit[data-n=cold_work]")).not_to_have_count(0)

        page.select_option("select[aria-label='compare with']", tree)
        expect(page.locator("#flame")).to_have_attribute("data-base", tree)
        expect(page.locator("#moves-table tbody tr").first).to_be_visible()
        expect(page.locator("#moves-table")).to_contain_text("hot_work")
        page.screenshot(path=str(ARTIFACTS / "diagnosis-diff.png"), full_page=True)
    assert not errors, errors


@pytest.fixture(scope="module")
def lock_and_system(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Server, str, str, int]]:
    """One server over two real diagnoses: one with lock waits, of a program whose lock, the
    function taking it and its caller have names as long as C++ or Java frames; then (the
    newest) a 2 s `hone diagnose --system` while `spinners 1` (one thread in spin_work) runs in
    a session of its own (with autogroup scheduling it gets its own share of a busy machine).
    The server, the two diagnoses' names and the spinner's pid."""
    home = tmp_path_factory.mktemp("lock-home")
    program = build("lock_long_names", tmp_path_factory.mktemp("lock-bin"))
    done = run_hone(
        "diagnose", "--", str(program), "2", env={**os.environ, "HONE_HOME": str(home)},
        cwd=Path.cwd(), timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (lock,) = [p.name for p in (home / "diagnoses").iterdir()]
    program = build("spinners", tmp_path_factory.mktemp("system-bin"))
    spinner = subprocess.Popen(["setsid", str(program), "1", "30"])
    try:
        time.sleep(0.2)  # its thread started
        done = run_hone(
            "diagnose", "--system", "--duration", "2", env={**os.environ, "HONE_HOME": str(home)},
            cwd=Path.cwd(), timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    finally:
        spinner.kill()
        spinner.wait()
    (system,) = [p.name for p in (home / "diagnoses").iterdir() if p.name != lock]
    process, url = start_server(home, cwd=ROOT)
    try:
        yield Server(url, "", home, {}, process), lock, system, spinner.pid
    finally:
        stop_server(process)


@pytest.fixture(scope="module")
def lock_diagnosis(lock_and_system: tuple[Server, str, str, int]) -> tuple[Server, str]:
    """The server and the diagnosis with lock waits."""
    server, lock, _, _ = lock_and_system
    return server, lock


LONG_LOCK = "storage_engine_transactional_write_ahead_log_commit_lock_guarding_the_segment_index"
LONG_SITE = "storage_engine_write_ahead_log_flush_worker_loop_draining_the_pending_batches_forever"


@pytest.mark.slow
@pytest.mark.parametrize("width", [800, 1920])
def test_lock_table_readable_at_laptop_and_monitor_width(
    lock_diagnosis: tuple[Server, str], chromium: Browser, width: int
) -> None:
    """Every column of the lock waits (and the other diagnosis tables) fits its card: long
    names break inside their cell instead of pushing "where" and "threads" out of sight."""
    server, name = lock_diagnosis
    locks = server.get(f"/api/diagnoses/{name}")["locks"]  # type: ignore[index]
    top = locks["user"][0]
    assert top["lock"] == LONG_LOCK and top["site"].startswith(LONG_SITE), top
    with browser(chromium, width=width, height=1000) as (page, _errors):
        page.goto(f"{server.url}/#/diagnosis/{name}")
        page.wait_for_selector("body[data-ready=diagnosis]", timeout=30_000)
        row = page.locator("#locks tbody tr", has_text=LONG_LOCK)
        expect(row.locator("td").nth(4)).to_contain_text(LONG_SITE)
        page.locator("#locks").screenshot(path=str(ARTIFACTS / f"diagnosis-locks-{width}.png"))
        for table in ("#locks", "#threads", "#table-functions", "#table-modules"):
            box = page.locator(f"{table} .table-scroll")
            sizes = box.evaluate("e => [e.scrollWidth, e.clientWidth]")
            assert sizes[0] <= sizes[1], (table, width, sizes)  # nothing hidden to the right
        scroll = page.locator("#locks .table-scroll").bounding_box()
        for cell in row.locator("td").all():
            edge = cell.bounding_box()
            assert edge is not None and scroll is not None
            assert edge["x"] + edge["width"] <= scroll["x"] + scroll["width"] + 1, cell.inner_text()


@pytest.mark.slow
def test_diagnosis_pages_back_forward_and_reload(
    diagnoses: tuple[Server, list[str]], chromium: Browser
) -> None:
    server, (tree, split) = diagnoses
    with browser(chromium) as (page, _errors):
        # this server has diagnoses and no study: the list says so, not an empty table
        page.goto(f"{server.url}/#/")
        page.wait_for_selector("body[data-ready=studies]")
        expect(page.locator(".status-line")).to_have_text(re.compile("^No studies yet: "))
        expect(page.locator("#studies")).to_be_hidden()
        page.get_by_role("link", name="Diagnoses").click()
        page.wait_for_selector("body[data-ready=diagnoses]")
        for name in (split, tree):
            page.locator(f"#diagnoses a[href$='{name}']").click()
            page.wait_for_selector("body[data-ready=diagnosis]", timeout=30_000)
            expect(page.locator("#main h1")).to_have_count(1)
            expect(page.locator(".crumbs")).to_contain_text(name)
            page.go_back()
            page.wait_for_selector("body[data-ready=diagnoses]")
            expect(page.locator("#main h1")).to_have_text("Diagnoses")
        page.go_forward()
        page.wait_for_selector("body[data-ready=diagnosis]", timeout=30_000)
        expect(page.locator(".crumbs")).to_contain_text(tree)
        page.reload()
        page.wait_for_selector("body[data-ready=diagnosis]", timeout=30_000)
        expect(page.locator(".crumbs")).to_contain_text(tree)
        expect(page.locator("#flame svg")).to_have_count(1)
        expect(page.locator("#main h1")).to_have_count(1)
        # On a phone: the "compare with" list, as wide as its longest option (a diagnosis and
        # its command), and long knob names and paths stay inside the screen.
        page.set_viewport_size({"width": 390, "height": 844})
        overflow = page.evaluate("() => document.documentElement.scrollWidth - innerWidth")
        assert overflow <= 0, f"the diagnosis page is wider than a phone by {overflow} px"


@pytest.fixture(scope="module")
def system_diagnosis(lock_and_system: tuple[Server, str, str, int]) -> tuple[Server, str, int]:
    """The server, the whole-system diagnosis and the spinner's pid."""
    server, _, system, pid = lock_and_system
    return server, system, pid


@pytest.mark.slow
def test_system_diagnosis_page_shows_cpu_split_busiest_and_process_table(
    system_diagnosis: tuple[Server, str, int], chromium: Browser
) -> None:
    server, name, pid = system_diagnosis
    machine = server.get(f"/api/diagnoses/{name}")["system"]  # type: ignore[index]
    processes = machine["processes"]
    spinner = next(p for p in processes if p["pid"] == pid)
    assert spinner["hottest"] == "spin_work (spinners)" and spinner["cpu_pct"] > 5, spinner
    assert spinner["drill_in"] == f"hone diagnose --pid {pid}"
    assert 0 < machine["busy_cpus"] <= machine["cpus"]
    top = processes[0]
    with browser(chromium) as (page, errors):
        page.goto(f"{server.url}/#/diagnoses")
        page.wait_for_selector("body[data-ready=diagnoses]")
        expect(page.locator("#diagnoses tbody tr").first).to_contain_text("whole system")
        page.locator(f"#diagnoses a[href$='{name}']").click()
        page.wait_for_selector("body[data-ready=diagnosis]", timeout=30_000)

        split = page.locator("#cpu-split")
        expect(split.locator("caption")).to_contain_text(f"all {machine['cpus']} CPUs")
        for state in ("user", "system", "idle"):
            cell = split.locator("tr", has=page.locator(f"th:text-is('{state}')")).locator("td.num")
            expect(cell).to_have_text(re.compile(r"^\d+(\.\d)? %$"))
        expect(page.locator("#cpu-time")).to_contain_text(f"of {machine['cpus']} CPUs busy")
        # hone's own cost (its process and perf, when they ran a clock tick), on its own line
        cost = page.locator("#hone-cost")
        expect(cost).to_have_count(1 if machine["hone"] else 0)
        for own in machine["hone"]:
            expect(cost).to_contain_text(f"{own['comm']} pid {own['pid']} ")

        expect(page.locator("#busiest dd").first).to_have_text(top["command"])
        expect(page.locator("#busiest code.drill-in")).to_have_text(top["drill_in"])

        table = page.locator("#processes table")
        expect(table.locator("caption")).to_contain_text("% of one CPU")
        expect(page.locator("#processes .count")).to_have_text(
            f"{len(processes)} of {len(processes)} rows"
        )
        row = table.locator("tbody tr", has=page.locator(f"td:text-is('{pid}')"))
        expect(row).to_have_count(1)
        expect(row).to_contain_text("spinners 1 30")
        expect(row).to_contain_text("spin_work (spinners)")
        expect(row).to_contain_text(f"hone diagnose --pid {pid}")
        expect(row.locator("td").nth(2)).to_have_text(re.compile(r"^\d+(\.\d+)?$"))
        table.locator("th[data-key=pid] button").click()  # sortable like the other tables
        expect(table.locator("th[data-key=pid]")).to_have_attribute("aria-sort", "ascending")
        lowest = min(p["pid"] for p in processes)
        expect(table.locator("tbody tr").first.locator("td").first).to_have_text(str(lowest))
        # threads, off-CPU and locks are per process: the drill-in command has them
        for absent in ("#threads", "#offcpu", "#locks"):
            expect(page.locator(absent)).to_have_count(0)
        page.screenshot(path=str(ARTIFACTS / "diagnosis-system.png"), full_page=True)
    assert not errors, errors
