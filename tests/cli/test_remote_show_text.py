"""`hone remote show` prints the best configuration as given: Rich read a value such as
THP's `always [madvise] never` as markup and printed `always  never`."""

from __future__ import annotations

from typing import Any

import hone.serve.cli as serve_cli

VALUE = "always [madvise] never"


class Server:
    """The answers of a `hone serve` with one study."""

    def get(self, path: str) -> Any:
        if path.endswith("/best"):
            return {"source": "confirmed", "config": {"thp": VALUE}, "gain": 3.0}
        if path.endswith("/trials"):
            return [{"number": 0, "phase": "search", "config": {"thp": VALUE}, "score": 1.0,
                     "state": "complete", "error": None}]  # fmt: skip
        return {"name": "web#1", "state": "finished", "engine": "auto", "trials": 1, "failures": 0}


def test_remote_show_prints_values_with_brackets_whole(hone_run, monkeypatch) -> None:
    monkeypatch.setattr(serve_cli, "_client", Server)
    ran = hone_run("remote", "--server", "http://127.0.0.1:9", "show", "web#1")
    assert ran.code == 0, ran.stderr
    assert f"best (confirmed): thp={VALUE}" in ran.stdout and ran.stdout.count(VALUE) == 2
