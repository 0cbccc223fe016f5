"""`--json` of the listing commands, read back: the local CLI and `hone --server URL` give the
REST API's documented shapes (docs/serve.md), and profiles list, show and check as JSON."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from conftest import ROOT
from forked_hone import run_hone


def hone_json(home: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    result = run_hone(
        *args, "--json", env={**os.environ, "HONE_HOME": str(home), **(env or {})}, cwd=ROOT,
        timeout=120,
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr  # profile check exits 1 on a difference
    return json.loads(result.stdout)


def test_studies_and_show_as_json_locally_and_remotely(server: Any) -> None:
    local = hone_json(server.home, "studies")
    assert {s["name"] for s in local} >= {"alpha#1", "alpha#2", "beta#1"}
    assert [s["name"] for s in local] == [s["name"] for s in server.get("/api/studies")]
    beta = next(s for s in local if s["name"] == "beta#1")
    assert beta["failures"] >= 1 and beta["state"] == "finished"
    shown = hone_json(server.home, "show", "beta#1")
    assert set(shown) == {"study", "best", "trials", "knobs"}
    assert {k["knob"] for k in shown["knobs"]} == {"x", "mode"} and shown["knobs"][0]["effect"]
    assert shown["study"]["name"] == "beta#1" and len(shown["trials"]) == beta["trials"]
    assert any(t["state"] == "fail" and t["error"] for t in shown["trials"])
    env = {"HONE_TOKEN": server.token}
    remote = hone_json(server.home, "--server", server.url, "show", "beta#1", env=env)
    assert remote["study"]["name"] == "beta#1" and remote["knobs"] == shown["knobs"]
    assert [t["number"] for t in remote["trials"]] == [t["number"] for t in shown["trials"]]
    listed = hone_json(server.home, "--server", server.url, "studies", env=env)
    assert [s["name"] for s in listed] == [s["name"] for s in local]


def test_profiles_as_json(tmp_path: Path) -> None:
    (tmp_path / "mine.conf").write_text("[sysctl]\nvm.swappiness = 10\n[tip]\nuse fewer = x\n")
    env = {"HONE_PROFILE_PATH": str(tmp_path)}
    names = hone_json(tmp_path / "home", "profile", "list", env=env)
    assert {"name": "mine", "path": str(tmp_path / "mine.conf"), "active": False} in names
    info = hone_json(tmp_path / "home", "profile", "info", "mine", env=env)
    assert info["items"][0] == {
        "section": "sysctl",
        "key": "vm.swappiness",
        "value": "10",
        "from": "mine",
    }
    checked = hone_json(tmp_path / "home", "profile", "check", "mine", env=env)
    assert {c["status"] for c in checked} <= {"matches", "differs", "advice"}
    assert checked[0]["key"] == "vm.swappiness"


def test_remote_help_needs_no_server_and_a_missing_server_is_one_line(hone_cli) -> None:
    env_server = os.environ.pop("HONE_SERVER", None)
    try:
        helped = hone_cli("remote", "studies", "--help")
        missing = hone_cli("remote", "studies")
    finally:
        if env_server is not None:
            os.environ["HONE_SERVER"] = env_server
    assert helped.returncode == 0 and "--json" in helped.stdout, helped.stderr
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        "hone: remote: which server? give --server URL or set HONE_SERVER"
    ]


def test_check_as_json_for_a_project_and_for_each_half_of_an_a_tune_pair(tmp_path: Path) -> None:
    project = hone_json(tmp_path, "check", "examples/memcached")
    knobs = {k["name"]: k for k in project["knobs"]}
    assert knobs["threads"]["domain"] == {
        "type": "int", "low": 1, "high": 8, "step": 1, "log": False
    }  # fmt: skip
    assert knobs["threads"]["restart"] is True and knobs["threads"]["reference"] == 4
    assert project["goal"][0]["name"] == "tps" and project["goal"][0]["direction"] == "maximize"
    assert project["benchmark"]["command"].startswith("timeout 20 memcaslap")
    assert project["tuning"]["engine"] == "auto" and "max_conn >= 64" in project["constraints"]
    corpus = ROOT.parent / "shared" / "atune-corpus" / "examples" / "kafka"
    server = hone_json(tmp_path, "check", str(next(corpus.glob("*server*.yaml"))))
    assert server["atune"] == "server"
    batch = next(k for k in server["knobs"] if k["name"] == "kafka.batch_size")
    assert batch["set_by"].endswith('batch.size=$value/" working_dir/config/server.properties)')
    client = hone_json(tmp_path, "check", str(next(corpus.glob("*client*.yaml"))))
    assert client["atune"] == "client" and client["tuning"]["budget"] == 100
    selecting = corpus.parent / "key_parameters_select"
    tuning = hone_json(tmp_path, "check", str(selecting))["tuning"]
    assert tuning["select"] == {"count": 2, "trials": 20}  # A-Tune's feature_filter_*
    assert (tuning["random_starts"], tuning["split_count"], tuning["objective"]) == (
        10, 4, "atune"
    )  # fmt: skip
    assert client["goal"] and client["benchmark"]["command"]
