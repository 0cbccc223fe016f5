"""Studies in a real PostgreSQL database (`--storage URL`), as several machines would share."""

from __future__ import annotations

import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from hone.space import IntRange, SearchSpace
from hone.storage import StudyStore

BIN = Path("/usr/lib/postgresql/15/bin")


@pytest.fixture
def postgres_url(tmp_path_factory: pytest.TempPathFactory):
    folder = Path("/tmp") / f"hone-test-pg-{id(tmp_path_factory)}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    shutil.chown(folder, "postgres")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    run = ["runuser", "-u", "postgres", "--"]
    subprocess.run(
        [*run, BIN / "initdb", "-D", folder / "data", "-A", "trust", "-U", "postgres"],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            *run,
            BIN / "pg_ctl",
            "-D",
            folder / "data",
            "-w",
            "-l",
            folder / "log",
            "-o",
            f"-p {port} -k {folder} -c listen_addresses=127.0.0.1",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*run, BIN / "pg_ctl", "-D", folder / "data", "-m", "immediate", "stop"],
            capture_output=True,
        )
        shutil.rmtree(folder, ignore_errors=True)


def test_studies_and_trials_round_trip_in_postgresql(postgres_url: str) -> None:
    store = StudyStore(postgres_url)
    study = store.create("shared", {"engine": "auto"})
    space = SearchSpace({"x": IntRange(1, 9)})
    for x in (3, 5):
        trial = store.start_trial(study, space, {"x": x}, "search")
        store.finish_trial(trial, score=x * 2.0, metrics={"v": x * 2.0})
    other = StudyStore(postgres_url)  # another process or machine opening the same database
    trials = other.trials(other.find("shared"))
    assert [(t.config, t.score, t.state) for t in trials] == [
        ({"x": 3}, 6.0, "complete"),
        ({"x": 5}, 10.0, "complete"),
    ]
