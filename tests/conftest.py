"""Fixtures for every test: hone's state lives in a temporary folder, never /var/lib/hone."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import forked_hone
import pytest
from forked_hone import run_hone

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


def pytest_configure() -> None:
    """The tests' interpreter's folder first on PATH: the `python3` found there otherwise may be
    pyenv's shim, a bash script that takes 0.25 s to start Python (0.03 s without it), paid by
    every benchmark run of every `python3 ...` project. A user's python3 has no shim."""
    folder = str(Path(sys.executable).parent)
    os.environ["PATH"] = os.pathsep.join([folder, os.environ.get("PATH", "")])
    # the machine-wide folder of setting locks, never the machine's own: each test gets its own
    # (hone_home); this one serves what starts before a test's fixtures (a module's server)
    os.environ["HONE_SETTINGS_DIR"] = tempfile.mkdtemp(prefix="hone-settings-")


def pytest_collection_finish() -> None:
    """The environment the forked `hone` helper starts in, taken once every test module is
    imported: some set variables as they load (benchmarks.tuners sets OPENBLAS_NUM_THREADS), and
    an environment taken before them differed from every test's, so no command was forked."""
    forked_hone.SESSION_ENV.update(os.environ)


def pytest_unconfigure() -> None:
    forked_hone.close()
    shutil.rmtree(os.environ.pop("HONE_SETTINGS_DIR", ""), ignore_errors=True)


@pytest.fixture(autouse=True)
def hone_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("hone-home")
    monkeypatch.setenv("HONE_HOME", str(home))
    # the machine-wide folder of setting locks and settings left changed, one per test: a run a
    # test kills and leaves unrestored must not hold a sysctl against the tests after it
    monkeypatch.setenv("HONE_SETTINGS_DIR", str(tmp_path_factory.mktemp("hone-settings")))
    return home


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Callable[..., Path]]:
    """`small_disk("8k")`: a folder on a real file system of that size (a tmpfs), which hone's
    own writes fill: what a full disk does to a command, without filling the machine's."""
    mounted: list[Path] = []

    def mount(size: str, name: str = "small") -> Path:
        folder = tmp_path / name
        folder.mkdir()
        options = ["-t", "tmpfs", "-o", f"size={size}"]
        subprocess.run(["mount", *options, "tmpfs", str(folder)], check=True)
        mounted.append(folder)
        return folder

    yield mount
    for folder in mounted:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.fixture
def hone_cli(hone_home: Path):
    """Run the real `hone` command line in a child process (with this test's HONE_HOME)."""

    def run(
        *args: str, cwd: Path | None = None, timeout: float = 300
    ) -> subprocess.CompletedProcess:
        env = {**os.environ, "HONE_HOME": str(hone_home), "COLUMNS": "200"}
        return run_hone(*args, env=env, cwd=cwd or ROOT, timeout=timeout)

    return run
