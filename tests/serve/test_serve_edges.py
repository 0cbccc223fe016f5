"""The UI and API where a performance engineer's real studies differ from the tidy ones: figures
of four digits and more, an A-Tune project name with '/', ',', '#', spaces and non-ASCII
letters, knob names too long for their drawings, a study whose process was killed, and a run
of a served project started in a terminal. Its own server over its own HONE_HOME."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import BENCH, ROOT, Server, q, run_study, shot, start_server
from forked_hone import run_hone
from playwright.sync_api import Page, expect

from benchmarks.web import stop_server

WEIRD = "my app #2 ü/x,y"
LONG = "net.ipv4.tcp_a_very_long_kernel_parameter_name_that_goes_on_and_on_and_on_number_"


def hone_project(folder: Path, name: str, knobs: dict[str, str], bench: str, **tuning: Any) -> Path:
    """A hone project of int file knobs (name: start value, range 1..3) and a Python benchmark
    printing `throughput: N`."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"name: {name}", "knobs:"]
    for i, (knob, start) in enumerate(knobs.items()):
        (folder / f"k{i}.txt").write_text(f"{start}\n")
        high = 100_000_000 if len(knobs) > 1 else 3
        lines += [
            f"  {knob}:",
            f"    {{type: int, range: [1, {high}],",
            f"     shell: {{get: cat k{i}.txt, set: 'echo \"$value\" > k{i}.txt'}}}}",
        ]
    (folder / "bench.py").write_text(textwrap.dedent(bench))
    settings = {"engine": "random", "budget": 5, "baseline": 2, "apply": "never", "seed": 1}
    settings.update(tuning)
    lines += [
        f"benchmark: {{command: {BENCH}, timeout: 20}}",
        "metrics:",
        "  throughput: {pattern: 'throughput: (\\S+)', direction: maximize}",
        "tuning: {" + ", ".join(f"{k}: {v}" for k, v in settings.items()) + "}",
    ]
    (folder / "hone.yaml").write_text("\n".join(lines) + "\n")
    return folder


def atune_project(base: Path) -> Path:
    """An A-Tune pair whose project name holds '/', ',', '#', spaces and a non-ASCII letter
    (A-Tune's names are free text; its commands run in the folder above the project's)."""
    folder = base / "atune" / "weird"
    folder.mkdir(parents=True)
    (base / "atune" / "w.txt").write_text("1\n")
    (folder / "weird_server.yaml").write_text(
        textwrap.dedent(f"""\
        project: "{WEIRD}"
        maxiterations: 10
        object:
          - name: "w"
            info:
              get: "cat w.txt"
              set: "echo $value > w.txt"
              needrestart: "false"
              type: "continuous"
              dtype: "int"
              scope: [1, 4]
        """)
    )
    (folder / "weird_client.yaml").write_text(
        textwrap.dedent(f"""\
        project: "{WEIRD}"
        engine: "random"
        iterations: 3
        benchmark: "echo score: $(cat w.txt)"
        evaluations:
          - name: "score"
            info:
              get: "echo '$out' | awk '{{print $2}}'"
              type: "negative"
              weight: 100
        """)
    )
    return folder


def risky_project(folder: Path) -> Path:
    """`mode=unsafe` triples the throughput and is marked a durability risk: the run confirms
    it best, holds it back (no --allow-risk) and decides on the best safe configuration."""
    folder.mkdir(parents=True)
    (folder / "mode.txt").write_text("safe\n")
    (folder / "bench.py").write_text(
        "import random\n"
        "mode = open('mode.txt').read().strip()\n"
        "base = {'safe': 100, 'fast': 110, 'unsafe': 300}[mode]\n"
        "print(f'throughput: {base + random.uniform(-1, 1)}')\n"
    )
    (folder / "hone.yaml").write_text(
        textwrap.dedent(f"""\
        name: risky
        knobs:
          mode:
            type: categorical
            values: [safe, fast, unsafe]
            shell: {{get: cat mode.txt, set: 'echo "$value" > mode.txt'}}
            risk: {{durability: [unsafe]}}
        benchmark: {{command: {BENCH}, timeout: 20}}
        metrics:
          throughput: {{pattern: 'throughput: (\\S+)', direction: maximize}}
        tuning: {{engine: random, budget: 3, baseline: 2, apply: never, seed: 1,
                 start: [{{mode: unsafe}}, {{mode: fast}}], confirm: {{candidates: 2, rounds: 2}}}}
        """)
    )
    return folder


def kill_mid_run(folder: Path, home: Path) -> None:
    """`hone tune` killed with SIGKILL while its second search trial runs (the first is
    stored): the study stays `running` with the pid of a process that is gone, and a trial
    left running. (Killed as soon as the first was reported, it sometimes died while the
    optimiser chose the next, with no trial running.)"""
    from hone.storage import StudyStore

    log = folder / "tune.log"
    with log.open("w") as out, pytest.MonkeyPatch.context() as patch:
        patch.setenv("HONE_HOME", str(home))
        tune = subprocess.Popen(
            [sys.executable, "-m", "hone", "tune", str(folder), "--no-why"],
            env={**os.environ, "HONE_HOME": str(home)},
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while "trial 1/" not in log.read_text(errors="replace"):
            assert time.monotonic() < deadline and tune.poll() is None, log.read_text()
            time.sleep(0.2)
        store = StudyStore()
        study = store.find(folder.name)
        while not any(t.state == "running" and t.phase == "search" for t in store.trials(study)):
            assert time.monotonic() < deadline and tune.poll() is None, log.read_text()
            time.sleep(0.05)
        tune.kill()
        tune.wait()


@pytest.fixture(scope="module")
def edges(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("edges-home")
    base = tmp_path_factory.mktemp("edges-projects")
    # Deterministic four-digit figures (x=2: 2000.4); one confirmation round confirms no gain.
    figures = hone_project(
        base / "figures",
        "figures",
        {"x": "2"},
        """\
        x = int(open("k0.txt").read())
        print(f"throughput: {1000 * x + 0.4}")
        """,
        confirm="{candidates: 1, rounds: 1}",
    )
    run_study(figures, home, why=False)
    run_study(atune_project(base), home, why=False)
    wide = hone_project(
        base / "wide",
        "wide",
        {f"{LONG}{i}": "1" for i in range(3)},
        """\
        k = [int(open(f"k{i}.txt").read()) for i in range(3)]
        print(f"throughput: {100 + k[0] / 1e6 + k[1] / 2e6 + k[2] / 4e6}")
        """,
        budget=8,
    )
    run_study(wide, home, why=False)
    run_study(risky_project(base / "risky"), home, why=False)
    # x = 5 before tuning, outside the range: the baseline measures, every search value fails
    failing = (
        "import sys\nif open('k0.txt').read().strip() != '5': sys.exit(3)\nprint('throughput: 5')\n"
    )
    run_study(
        hone_project(base / "failing", "failing", {"x": "5"}, failing, budget=3), home, why=False
    )
    slow = "import time; time.sleep(0.5); print('throughput: 5')\n"
    stale = hone_project(base / "stale", "stale", {"x": "2"}, slow, budget=50)
    kill_mid_run(stale, home)
    busy = hone_project(base / "busy", "busy", {"x": "2"}, slow, budget=50)
    process, url = start_server(home, {"busy": busy})
    token = (home / "serve" / "token").read_text().strip()
    yield Server(url, token, home, {"busy": busy}, process)
    stop_server(process)


def column(page: Page, key: str) -> list[str]:
    """The text of every body cell of the trial table's column `key`."""
    return page.evaluate(
        """(key) => {
            const heads = [...document.querySelectorAll('#trials thead th')];
            const i = heads.findIndex((th) => th.dataset.key === key);
            const rows = [...document.querySelectorAll('#trials tbody tr')];
            return rows.map((tr) => tr.cells[i].textContent);
        }""",
        key,
    )


def fact(page: Page, name: str) -> str:
    """The study header's value for `name` (engine, baseline, measurement, ...)."""
    return page.locator(f"dl.facts dt:text-is('{name}') + dd").inner_text()


def test_figures_of_four_digits_are_written_in_full(page: Page, edges: Server) -> None:
    trials = edges.get(f"/api/studies/{q('figures#1')}/trials")
    page.goto(edges.url + f"/#/study/{q('figures#1')}")
    page.wait_for_selector("body[data-ready=study]")
    shown = column(page, "m:throughput")
    assert len(shown) == len(trials)
    for text, trial in zip(shown, trials, strict=True):
        value = trial["metrics"].get("throughput")
        if value is not None:  # 2000.4 was written "2" (toPrecision's "2000" cut of its zeros)
            assert float(text) == pytest.approx(value, rel=1e-3), (text, value)
    assert fact(page, "baseline").startswith("2000 ± 0 ")
    # One confirmation round has no spread: no gain is confirmable (null in the JSON).
    quality = edges.get(f"/api/studies/{q('figures#1')}")["attrs"]["quality"]
    assert quality["rounds"] == 1 and quality["detectable"] is None
    assert fact(page, "measurement").startswith("CV 0 %; 1 round confirms no gain")
    shot(page, "edges-figures")


def test_a_name_with_slash_comma_hash_space_and_unicode(page: Page, edges: Server) -> None:
    name = f"{WEIRD}#1"
    trials = edges.get(f"/api/studies/{q(name)}/trials")
    assert edges.get(f"/api/studies/{q(name)}")["name"] == name
    assert edges.get(f"/api/studies/{q(WEIRD)}")["name"] == name  # the project's newest
    assert edges.get(f"/api/studies/{q(name)}/best")["source"] == "confirmed"
    assert isinstance(edges.get(f"/api/studies/{q(name)}/importance"), list)
    status, restored = edges.request("POST", f"/api/projects/{q(WEIRD)}/restore")
    assert status == 200 and restored["project"] == WEIRD, restored
    remote = run_hone(
        "remote", "--server", edges.url, "show", name, "--json", env=dict(os.environ), cwd=ROOT
    )
    assert remote.returncode == 0, remote.stderr
    assert '"name": "my app #2 \\u00fc/x,y#1"' in remote.stdout

    page.goto(edges.url + "/")
    page.wait_for_selector("body[data-ready=studies]")
    page.get_by_role("link", name=name).click()
    page.wait_for_selector("body[data-ready=study]")
    expect(page.locator("h1")).to_contain_text(name)
    expect(page.locator("#trials tbody tr")).to_have_count(len(trials))
    shot(page, "edges-weird-name")

    page.go_back()
    page.wait_for_selector("body[data-ready=studies]")
    page.get_by_label(f"compare {name}").check()
    page.get_by_label("compare figures#1").check()
    page.get_by_role("button", name="Compare selected").click()
    page.wait_for_selector("body[data-ready=compare]")
    labels = page.evaluate("() => window.honeCharts.compare.series.map((s) => s.label)")
    assert f"{name} (finished)" in labels and "figures#1 (finished)" in labels
    page.reload()  # the address alone brings the same comparison back
    page.wait_for_selector("body[data-ready=compare]")
    expect(page.locator("main table.data tbody tr")).to_have_count(2)


def test_long_knob_names_stay_readable(page: Page, edges: Server) -> None:
    page.set_viewport_size({"width": 800, "height": 900})
    page.goto(edges.url + f"/#/study/{q('wide#1')}")
    page.wait_for_selector("body[data-ready=study]")
    page.wait_for_function("() => Number(document.getElementById('effects').dataset.curves) > 0")
    overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"page wider than the window by {overflow} px"
    bars = page.evaluate(
        """() => {
            const box = document.querySelector('#importance svg').getBoundingClientRect();
            return [...document.querySelectorAll('#importance svg text')]
                .filter((t) => !t.textContent.endsWith('%'))
                .map((t) => ({left: t.getBoundingClientRect().left - box.left,
                              text: t.textContent,
                              whole: t.parentNode.querySelector('title')?.textContent}));
        }"""
    )
    assert len(bars) == 3
    for bar in bars:
        assert bar["left"] >= 0, f"label cut off on the left: {bar}"
        assert bar["whole"].startswith(LONG) and bar["text"][-1] == bar["whole"][-1]
    effects = page.evaluate(
        """() => [...document.querySelectorAll('#effects svg.effect')].map((s) => {
            const box = s.getBoundingClientRect();
            const labels = [...s.querySelectorAll('text:not(.title)')].slice(2)
                .map((t) => t.getBoundingClientRect()).map((r) => [r.left, r.right]);
            const title = s.querySelector('text.title');
            return {overTheEdge: title.getBoundingClientRect().right - box.right, labels,
                    title: title.textContent};
        })"""
    )
    # Each axis of the parallel coordinates is named inside the drawing, the end of the name
    # kept (the first one, centred 50 px from the edge, lost its start).
    names = page.evaluate(
        """() => {
            const box = document.querySelector('#parallel svg').getBoundingClientRect();
            return [...document.querySelectorAll('#parallel text.axis-name')].map((t) => {
                const r = t.getBoundingClientRect();
                const whole = t.parentNode.querySelector('title').textContent;
                return {left: r.left - box.left, right: box.right - r.right,
                        text: t.textContent, whole};
            });
        }"""
    )
    assert [n["whole"] for n in names] == [f"{LONG}{i}" for i in range(3)] + ["score"]
    for name in names:
        assert name["left"] >= 0 and name["right"] >= 0, f"axis name cut off: {name}"
        assert name["text"][-1] == name["whole"][-1], name
    assert len({e["title"] for e in effects}) == len(effects) > 0
    for effect in effects:
        assert effect["overTheEdge"] <= 1, effect
        spans = sorted(effect["labels"])
        for (_, right), (left, _) in itertools.pairwise(spans):
            assert left >= right, f"value labels overlap: {spans}"
    shot(page, "edges-long-names")


def test_a_killed_run_offers_resume_not_stop(page: Page, edges: Server) -> None:
    study = edges.get("/api/studies/stale")
    assert (study["state"], study["alive"]) == ("running", False)
    page.goto(edges.url + f"/#/study/{q(study['name'])}")
    page.wait_for_selector("body[data-ready=study]")
    expect(page.get_by_role("button", name="Resume")).to_be_visible()
    expect(page.get_by_role("button", name="Stop")).to_have_count(0)
    page.get_by_label("state").select_option("running")
    rows = page.locator("#trials tbody tr")
    expect(rows).not_to_have_count(0)
    for text in column(page, "state"):
        assert text == "‖ interrupted"
    page.goto(edges.url + "/#/")
    page.wait_for_selector("body[data-ready=studies]")
    expect(page.locator(".status-line")).to_contain_text(" 0 running")


def test_a_run_in_a_terminal_is_not_started_again_by_the_server(edges: Server) -> None:
    folder = edges.projects["busy"]
    tune = subprocess.Popen(
        [sys.executable, "-m", "hone", "tune", str(folder), "--no-why"],
        env={**os.environ, "HONE_HOME": str(edges.home)},
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        # the study is listed a moment before its pid is recorded: until then it is not running
        while edges.request("GET", "/api/studies/busy")[1].get("alive") is not True:
            assert time.monotonic() < deadline and tune.poll() is None
            time.sleep(0.1)
        status, body = edges.request("POST", f"/api/studies/{q('busy#1')}/resume")
        assert status == 409 and f"pid {tune.pid}" in body["detail"], body
        status, body = edges.request("POST", "/api/studies", {"project": "busy"})
        assert status == 409 and f"pid {tune.pid}" in body["detail"], body
        assert edges.get("/api/runs") == []  # nothing was started to fail on the journal's lock
    finally:
        tune.send_signal(signal.SIGINT)
        tune.wait(60)
    assert (folder / "k0.txt").read_text().strip() == "2"


def test_a_risky_best_held_back_is_not_shown_as_the_gain(page: Page, edges: Server) -> None:
    """The best search trial ran `mode=unsafe` (+200 %), which the run held back: the list and
    the study page say so beside that figure, as `hone show` does, and the confirmed gain is
    the safe configuration's."""
    row = next(r for r in edges.get("/api/studies") if r["name"] == "risky#1")
    assert row["best_held_back"] == ["mode=unsafe"] and row["best_gain"] > 150, row
    assert (
        next(r for r in edges.get("/api/studies") if r["name"] == "figures#1")["best_held_back"]
        == []
    )
    env = {**os.environ, "HONE_HOME": str(edges.home)}

    def hone(*args: str) -> subprocess.CompletedProcess:
        return run_hone(*args, env=env, cwd=ROOT)

    listed = hone("studies", "--json")
    assert next(r for r in json.loads(listed.stdout) if r["name"] == "risky#1") == row
    shown = hone("show", "risky#1")
    assert "risky winner (held back: needs --allow-risk): mode=unsafe" in shown.stdout
    safe = json.loads(hone("show", "risky#1", "--json").stdout)["best"]
    assert safe["config"] == {"mode": "fast"} and safe["source"] == "confirmed"

    page.goto(edges.url + "/")
    page.wait_for_selector("body[data-ready=studies]")
    cell = page.locator("#studies tbody tr[data-study='risky#1'] td").nth(8)
    expect(cell).to_have_text(f"+{row['best_gain']:.1f} % (risky, held back: mode=unsafe)")
    plain = page.locator("#studies tbody tr[data-study='figures#1'] td").nth(8)
    expect(plain).not_to_contain_text("risky")
    page.goto(edges.url + f"/#/study/{q('risky#1')}")
    page.wait_for_selector("body[data-ready=study]")
    assert fact(page, "best seen").endswith("(risky, held back: mode=unsafe)")
    expect(page.locator("section.best")).to_contain_text("risky winner: mode=unsafe")
    shot(page, "edges-risky")


def test_a_finished_study_whose_every_search_trial_failed(page: Page, edges: Server) -> None:
    study = edges.get("/api/studies/failing")
    trials = edges.get(f"/api/studies/{q(study['name'])}/trials")
    search = [t for t in trials if t["phase"] == "search"]
    assert study["state"] == "finished" and search and all(t["state"] == "fail" for t in search)
    page.goto(edges.url + f"/#/study/{q(study['name'])}")
    page.wait_for_selector("body[data-ready=study]")
    expect(page.locator("section.best p").first).to_have_text(
        f"no configuration measured: all {len(search)} search trials failed "
        "(reasons in the trial table)"
    )
