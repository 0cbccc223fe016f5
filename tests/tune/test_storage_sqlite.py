"""The SQLite study database of a machine, opened by several hone processes at once."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from hone.errors import HoneError
from hone.storage import StudyStore


def _open(url: str, together: multiprocessing.synchronize.Barrier, said: multiprocessing.Queue):
    together.wait()
    try:
        StudyStore(url)
        said.put("")
    except HoneError as exc:
        said.put(str(exc))


def test_processes_opening_a_new_database_at_once_all_open_it(tmp_path: Path) -> None:
    """`hone tune` started while another hone command opens the same new database (a test's
    poll, `hone studies`, a second project's run): both created Optuna's tables and one
    failed with `cannot open study storage ...: table studies already exists` (one of three
    processes, in every try here)."""
    StudyStore(f"sqlite:///{tmp_path / 'warm.db'}")  # the lazy imports, before the fork
    url = f"sqlite:///{tmp_path / 'studies.db'}"
    context = multiprocessing.get_context("fork")
    together, said = context.Barrier(3), context.Queue()
    processes = [context.Process(target=_open, args=(url, together, said)) for _ in range(3)]
    for process in processes:
        process.start()
    errors = [said.get(timeout=60) for _ in processes]
    for process in processes:
        process.join(timeout=60)
    assert errors == [""] * 3, errors
