"""`hone diagnose --compare A B --json` prints JSON; it printed the terminal text instead."""

from __future__ import annotations

import json
from pathlib import Path


def test_compare_json_is_the_moves_as_data(tmp_path: Path, hone_run) -> None:
    before, after = tmp_path / "before.folded", tmp_path / "after.folded"
    before.write_text("app;main;parse 80\napp;main;write 20\n")
    after.write_text("app;main;parse 30\napp;main;write 70\n")
    ran = hone_run("diagnose", "--compare", str(before), str(after), "--json")
    assert ran.code == 0, ran.stderr
    data = json.loads(ran.stdout)
    moved = {m["name"]: (m["before"], m["after"]) for m in data["functions"]}
    assert moved["parse"] == (0.8, 0.3) and moved["write"] == (0.2, 0.7)
    assert Path(data["report"]).is_file() and data["summary"]
