"""One real `hone serve` for the whole directory, over studies made by real short tuning runs of
tiny projects (file knobs, a Python benchmark) in a private HONE_HOME."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import textwrap
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright

from benchmarks import web
from benchmarks.web import CHROMIUM, CHROMIUM_ARGS, stop_server

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "serve"
#: The test projects' benchmark, as a YAML string, on the interpreter running the tests: the
#: `python3` on PATH may be a version manager's shim (pyenv's takes 0.4 s to start), paid on
#: every trial of every study these tests run.
BENCH = json.dumps(f"{shlex.quote(sys.executable)} bench.py")


def make_project(folder: Path, name: str, sleep: float = 0.0, budget: int = 6) -> Path:
    """A project whose score depends on two file knobs; x == 7 fails with a reason."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "x.txt").write_text("2\n")
    (folder / "mode.txt").write_text("plain\n")
    (folder / "bench.py").write_text(
        textwrap.dedent(f"""\
        import random, sys, time
        time.sleep({sleep})
        x = int(open("x.txt").read())
        mode = open("mode.txt").read().strip()
        if x == 7:
            print("x=7 is broken on purpose", file=sys.stderr); sys.exit(4)
        bonus = {{"plain": 0, "fast": 15, "faster": 25}}[mode]
        print(f"throughput: {{100 + 4 * x + bonus + random.uniform(-1, 1):.3f}}")
        print(f"latency: {{10 - x / 2:.3f}}")
        """)
    )
    (folder / "hone.yaml").write_text(
        textwrap.dedent(f"""\
        name: {name}
        knobs:
          x:
            type: int
            range: [0, 10]
            shell: {{get: cat x.txt, set: 'echo "$value" > x.txt'}}
          mode:
            type: categorical
            values: [plain, fast, faster]
            shell: {{get: cat mode.txt, set: 'echo "$value" > mode.txt'}}
        benchmark: {{command: {BENCH}, timeout: 20}}
        metrics:
          throughput: {{pattern: 'throughput: (\\S+)', direction: maximize, unit: req/s}}
          latency: {{pattern: 'latency: (\\S+)', direction: minimize, weight: 0, unit: ms}}
        tuning: {{engine: random, budget: {budget}, baseline: 3, apply: never, seed: 1,
                  confirm: {{candidates: 1, rounds: 2}}}}
        """)
    )
    return folder


def run_study(folder: Path, home: Path, **options: object) -> None:
    """A real tuning run through the library (as `hone tune` runs it), in this process."""
    from hone.project import load_project
    from hone.tune.console import Reporter
    from hone.tune.records import TuneOptions
    from hone.tune.runner import Tuner

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HONE_HOME", str(home))
        Tuner(load_project(folder), Reporter(), TuneOptions(**options)).run()  # type: ignore[arg-type]


@dataclass
class Server:
    url: str
    token: str
    home: Path
    projects: dict[str, Path]
    process: subprocess.Popen

    def request(
        self, method: str, path: str, body: object = None, token: str | None = "default"
    ) -> tuple[int, object]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if token == "default":
            token = self.token
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            body_text = exc.read()
            try:
                return exc.code, json.loads(body_text)
            except ValueError:
                return exc.code, body_text.decode(errors="replace")

    def get(self, path: str, **kw: object) -> object:
        status, body = self.request("GET", path, **kw)  # type: ignore[arg-type]
        assert status == 200, (status, body)
        return body


def start_server(
    home: Path, projects: dict[str, Path], *extra: str
) -> tuple[subprocess.Popen, str]:
    """`hone serve` over `home`, allowed to run `projects`."""
    args = list(extra)
    for folder in projects.values():
        args += ["--project", str(folder)]
    return web.start_server(home, *args, cwd=ROOT)


@pytest.fixture(scope="session")
def serve_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A HONE_HOME with two finished studies of `alpha` and one of `beta`."""
    home = tmp_path_factory.mktemp("serve-home")
    base = tmp_path_factory.mktemp("serve-projects")
    alpha = make_project(base / "alpha", "alpha")
    beta = make_project(base / "beta", "beta", budget=8)
    # only beta#1 is profiled (the study page shows its why-it-won): seconds saved on alpha's
    run_study(alpha, home, why=False)
    run_study(alpha, home, budget=4, seed=2, why=False)
    run_study(beta, home, seed=8)  # this seed proposes x = 7, which fails
    return home


@pytest.fixture(scope="session")
def server(serve_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("served-projects")
    projects = {
        "gamma": make_project(base / "gamma", "gamma", budget=3),
        "slow": make_project(base / "slow", "slow", sleep=0.4, budget=200),
        "live": make_project(base / "live", "live", sleep=0.3, budget=200),
    }
    process, url = start_server(serve_home, projects)
    token = (serve_home / "serve" / "token").read_text().strip()
    yield Server(url, token, serve_home, projects, process)
    stop_server(process)


#: The directory's one Chromium and its Playwright, started by the first module that needs a
#: browser: a start took 1-3 s for each of six modules.
_CHROMIUM: dict[str, Any] = {}


def shared_chromium() -> Browser:
    """The directory's Chromium; each module (or test) opens a context of its own in it, which
    starts as empty as a new profile."""
    if not _CHROMIUM:
        playwright = sync_playwright().start()
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_ARGS))
        _CHROMIUM.update(playwright=playwright, browser=browser)
    return _CHROMIUM["browser"]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Chromium stops after this directory's last test, once the contexts in it are closed: a
    Playwright left running refuses to start another directory's."""
    yield
    here = Path(__file__).parent
    if _CHROMIUM and (nextitem is None or here not in nextitem.path.parents):
        _CHROMIUM.pop("browser").close()
        _CHROMIUM.pop("playwright").stop()


@pytest.fixture(scope="module")
def context() -> Iterator[BrowserContext]:
    """A browser context of the module's own: no cookies, storage or cache from another."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    context = shared_chromium().new_context(viewport={"width": 1440, "height": 900})
    yield context
    context.close()


@pytest.fixture
def page(context: Any) -> Iterator[Page]:
    """A new tab; the test fails if a script error happened in it."""
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    page.close()
    assert not errors, errors


def shot(page: Page, name: str) -> Path:
    """A full-page screenshot under artifacts/serve/, for a person to look at."""
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def q(name: str) -> str:
    """A study name as one URL path segment (a '#', '/' or ',' in it encoded)."""
    return urllib.parse.quote(name, safe="")
