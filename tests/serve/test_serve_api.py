"""The REST API over studies made by real tuning runs, and runs started, stopped, resumed and
restored through it (real worker processes, real knobs in files)."""

from __future__ import annotations

import gzip
import json
import os
import signal
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from hone.storage import StudyStore


def q(name: str) -> str:
    return urllib.parse.quote(name, safe="")


def store_of(server: Any) -> StudyStore:
    return StudyStore(f"sqlite:///{server.home / 'studies.db'}")


def test_list_has_every_study_with_state_counts_and_gain(server: Any) -> None:
    rows = {r["name"]: r for r in server.get("/api/studies")}
    assert {"alpha#1", "alpha#2", "beta#1"} <= set(rows)
    store = store_of(server)
    for name in ("alpha#1", "alpha#2", "beta#1"):
        row = rows[name]
        trials = store.trials(store.find(name))
        assert row["state"] == "finished"
        assert row["trials"] == len(trials)
        assert row["failures"] == sum(t.state == "fail" for t in trials)
        assert row["outcome"] == "restored"  # apply: never
        # mode=faster and a large x give about +40 %: the confirmed gain says so
        assert row["gain"] > 5 and row["gain_half_width"] is not None
        # a gain in % of the baseline has an interval wider above than below (log ratios)
        assert row["gain_low"] < row["gain"] < row["gain_high"]
        assert row["gain_high"] - row["gain"] > row["gain"] - row["gain_low"]
        search = [t.score for t in trials if t.phase == "search" and t.score is not None]
        assert row["best_score"] == pytest.approx(max(search))


def test_detail_trials_best_importance(server: Any) -> None:
    detail = server.get(f"/api/studies/{q('beta#1')}")
    assert detail["name"] == "beta#1" and detail["single_metric"] is True
    band = detail["band"]
    assert band["runs"] == 3 and band["low"] <= band["mean"] <= band["high"]
    assert set(detail["attrs"]["knobs"]) == {"x", "mode"}

    trials = server.get(f"/api/studies/{q('beta#1')}/trials")
    phases = {t["phase"] for t in trials}
    assert phases - {"disturbed"} == {"baseline", "search", "confirm"}  # disturbed: measured again
    assert len([t for t in trials if t["phase"] == "search"]) == 8
    failed = [t for t in trials if t["state"] == "fail"]
    assert failed, "the seed of beta hits x = 7"
    assert all("benchmark exited 4" in t["error"] for t in failed)
    assert all(t["config"]["x"] == 7 for t in failed)

    best = server.get(f"/api/studies/{q('beta#1')}/best")
    assert best["source"] == "confirmed" and set(best["config"]) == {"x", "mode"}

    shares = server.get(f"/api/studies/{q('beta#1')}/importance")
    assert {s["knob"] for s in shares} == {"x", "mode"}
    assert sum(s["share"] for s in shares) == pytest.approx(1.0)
    # each of the (at most three) leading knobs has its effect curve over its own values
    x_curve = next(s["effect"] for s in shares if s["knob"] == "x")
    assert len(x_curve) > 1 and all(0 <= p["value"] <= 10 for p in x_curve)
    assert len({p["score"] for p in x_curve}) > 1

    # a project name means its newest study
    assert server.get("/api/studies/alpha")["name"] == "alpha#2"


def test_unknown_study_is_404_and_openapi_is_served(server: Any) -> None:
    status, body = server.request("GET", f"/api/studies/{q('nope#9')}/trials")
    assert status == 404 and "nope#9" in body["detail"]
    spec = server.get("/api/openapi.json")
    assert spec["openapi"].startswith("3.")
    for path in ("/api/studies", "/api/studies/{name}/trials", "/api/studies/{name}/stop"):
        assert path in spec["paths"]


def read_events(
    server: Any, study: str, stop: Any, timeout: float = 60, query: str = ""
) -> list[tuple[str, Any]]:
    """Server-sent events of a study until `stop(events)` is true (asking for gzip, which an
    event stream must not be sent in: its events would wait in the compressor's buffer)."""
    request = urllib.request.Request(
        server.url + f"/api/studies/{q(study)}/events{query}", headers={"Accept-Encoding": "gzip"}
    )
    events: list[tuple[str, Any]] = []
    deadline = time.monotonic() + timeout
    with urllib.request.urlopen(request, timeout=timeout) as response:
        assert response.headers.get("Content-Encoding") is None
        kind = None
        for raw in response:
            line = raw.decode().rstrip("\n")
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: "):
                events.append((kind or "message", json.loads(line[6:])))
                if stop(events):
                    return events
            if time.monotonic() > deadline:
                break
    raise AssertionError(f"stream ended before the condition: {events[-5:]}")


def test_json_is_sent_gzipped_to_a_client_that_accepts_it(server: Any) -> None:
    path = server.url + f"/api/studies/{q('beta#1')}/trials"
    with urllib.request.urlopen(path) as response:  # urllib asks for no encoding
        assert response.headers.get("Content-Encoding") is None
        plain = response.read()
    request = urllib.request.Request(path, headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(request) as response:
        assert response.headers["Content-Encoding"] == "gzip"
        zipped = response.read()
    assert gzip.decompress(zipped) == plain and len(zipped) < len(plain) / 3


def test_events_leave_out_the_finished_trials_the_page_holds(server: Any) -> None:
    trials = server.get(f"/api/studies/{q('beta#1')}/trials")
    for after, expected in ((0, len(trials)), (5, len(trials) - 5), (len(trials), 0)):
        events = read_events(
            server, "beta#1", lambda ev: ev[-1][0] == "state", query=f"?after={after}"
        )
        sent = [e["number"] for kind, e in events if kind == "trial"]
        assert sent == list(range(after, len(trials))) and len(sent) == expected


def wait_for_study(server: Any, project: str, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        names = [r["name"] for r in server.get("/api/studies") if r["project"] == project]
        if names:
            return names[-1]
        time.sleep(0.1)
    raise AssertionError(f"no study of {project} appeared")


def test_start_a_study_and_follow_it_live_to_the_end(server: Any) -> None:
    status, run = server.request("POST", "/api/studies", {"project": "gamma", "budget": 3})
    assert status == 202 and run["project"] == "gamma", run
    name = wait_for_study(server, "gamma")
    events = read_events(
        server, name, lambda ev: any(k == "state" and e["state"] == "finished" for k, e in ev)
    )
    trials = {e["number"]: e for k, e in events if k == "trial" and e["state"] != "running"}
    stored = store_of(server).trials(store_of(server).find(name))
    # baseline, search, confirm; on a busy machine a disturbed reading (or a warm-up transient)
    # is kept apart and measured again, so those come on top
    kept = [t for t in stored if t.phase not in ("disturbed", "warmup")]
    assert len(kept) == 3 + 3 + 2 * 2, [t.phase for t in stored]
    assert len(trials) == len(stored)
    progress = [e for k, e in events if k == "progress"]
    assert any(e["event"] == "phase" and e["phase"] == "search" for e in progress)
    # apply: never, so the knob files are as they were
    assert (server.projects["gamma"] / "x.txt").read_text().strip() == "2"
    row = next(r for r in server.get("/api/studies") if r["name"] == name)
    assert row["state"] == "finished" and row["trials"] == len(stored)


def searching(event: dict[str, Any]) -> bool:
    """A run's progress event for a search trial (its `total` is the run's budget)."""
    return event["event"] == "trial" and event["phase"] == "search"


def test_stop_resume_and_restore_a_running_study(server: Any, hone_cli: Any) -> None:
    folder = server.projects["slow"]
    # a budget, baseline runs and seed of its own (the project's: 200, 3, 1), which the
    # resumed run keeps
    start = {"project": "slow", "budget": 150, "baseline": 1, "seed": 4}
    status, run = server.request("POST", "/api/studies", start)
    assert status == 202, run
    name = wait_for_study(server, "slow")
    read_events(
        server, name, lambda ev: any(k == "trial" and e["phase"] == "search" for k, e in ev)
    )
    # a second run of the same project is refused while one is going
    status, body = server.request("POST", "/api/studies", {"project": "slow"})
    assert status == 409 and "already going" in body["detail"]
    status, body = server.request("POST", f"/api/studies/{q(name)}/stop")
    assert status == 200 and body["stopped"] == name
    detail = server.get(f"/api/studies/{q(name)}")
    assert detail["state"] == "interrupted"
    assert (folder / "x.txt").read_text().strip() == "2"  # every knob put back
    assert (folder / "mode.txt").read_text().strip() == "plain"
    done_before = detail["trials"]

    status, body = server.request("POST", f"/api/studies/{q(name)}/resume")
    assert status == 202, body
    events = read_events(
        server,
        name,
        lambda ev: (
            sum(k == "trial" and e["state"] == "complete" for k, e in ev) > done_before
            and any(k == "progress" and searching(e) for k, e in ev)
        ),
    )
    assert {e["total"] for k, e in events if k == "progress" and searching(e)} == {150}
    baseline = [e for k, e in events if k == "progress" and e["event"] == "phase"]
    assert baseline[0]["phase"] == "baseline" and baseline[0]["total"] == 1, baseline
    store = store_of(server)
    study = store.find(name)
    assert sum(t.phase == "baseline" and t.state == "complete" for t in store.trials(study)) == 1
    assert server.get(f"/api/studies/{q(name)}")["attrs"]["tuning"]["seed"] == 4
    assert server.get(f"/api/studies/{q(name)}")["state"] == "running"
    status, body = server.request("POST", "/api/projects/slow/restore")
    assert status == 409  # not while a run of the project is going

    # A run killed outright leaves its journal: restore over HTTP puts the knobs back.
    pid = next(r["pid"] for r in server.get("/api/runs") if r["project"] == "slow" and r["running"])
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while any(r["running"] for r in server.get("/api/runs")) and time.monotonic() < deadline:
        time.sleep(0.05)
    row = next(r for r in server.get("/api/studies") if r["name"] == name)
    assert row["state"] == "running" and row["alive"] is False  # stale: its process is gone
    listed = hone_cli("remote", "--server", server.url, "studies")
    line = next(line for line in listed.stdout.splitlines() if f" {name} " in line)
    assert "running (stale)" in line, listed.stdout
    status, body = server.request("POST", f"/api/studies/{q(name)}/stop")
    assert status == 409 and "not running under this server" in body["detail"]
    assert f"its process (pid {pid}) is gone: resume it" in body["detail"], body  # not "elsewhere"
    status, body = server.request("POST", "/api/projects/slow/restore")
    assert status == 200 and body["ok"], body
    assert {r["name"] for r in body["restored"]} == {"x", "mode"}
    assert (folder / "x.txt").read_text().strip() == "2"
    assert (folder / "mode.txt").read_text().strip() == "plain"


def test_remote_cli_lists_and_shows_studies(server: Any, hone_cli: Any) -> None:
    result = hone_cli("remote", "--server", server.url, "studies")
    assert result.returncode == 0, result.stderr
    assert "alpha#1" in result.stdout and "beta#1" in result.stdout and "finished" in result.stdout
    result = hone_cli("remote", "--server", server.url, "show", "beta#1")
    assert result.returncode == 0, result.stderr
    assert "best (confirmed)" in result.stdout and "benchmark exited 4" in result.stdout
    result = hone_cli("remote", "--server", server.url, "stop", "beta#1")
    assert result.returncode == 2 and "401" in result.stderr  # no token given
    result = hone_cli("remote", "--server", server.url + "/?token=x", "studies")
    assert result.returncode == 2 and "must not carry credentials" in result.stderr
    for url, reason in (("http://127.0.0.1:99999", "Port out of range"), ("http://[::1", "IPv6")):
        result = hone_cli("remote", "--server", url, "studies")  # urllib's ValueError, once
        assert result.returncode == 2 and reason in result.stderr, result.stderr
        assert len(result.stderr.splitlines()) == 1, result.stderr
    result = hone_cli("--server", server.url, "studies")  # the global form
    assert result.returncode == 0 and "alpha#1" in result.stdout, result.stderr


def test_machine_info_and_one_sample(server: Any) -> None:
    info = server.get("/api/machine")
    assert info["cores"] >= 1 and info["kernel"]
    sample = server.get("/api/machine/sample?interval=0.3")
    assert set(sample["gauges"]) == {"cpu", "memory", "disk", "network"}
    assert 0 < sample["gauges"]["memory"] < 100
    assert "CPU.STAT.util" in sample["metrics"]
    assert sample["interval"] == pytest.approx(0.3, abs=0.15)
    status, _ = server.request("GET", "/api/machine/sample?interval=0")
    assert status == 422  # too short an interval is refused, not run


def test_the_machine_stream_sends_its_first_sample_at_once(server: Any) -> None:
    """A page opened on the machine draws its gauges after a quarter of a second, then one
    sample per interval as asked."""
    request = urllib.request.Request(server.url + "/api/machine/stream?interval=2")
    samples = []
    with urllib.request.urlopen(request, timeout=30) as response:
        for raw in response:
            if raw.startswith(b"data: "):
                samples.append(json.loads(raw[6:]))
                if len(samples) == 2:
                    break
    first, second = (s["interval"] for s in samples)
    assert first < 1.0 and second == pytest.approx(2.0, abs=0.5), (first, second)


SWAPPINESS = Path("/proc/sys/vm/swappiness")


@pytest.fixture
def swappiness_kept() -> Any:
    original = SWAPPINESS.read_text()
    yield int(original)
    SWAPPINESS.write_text(original)


def test_profiles_list_info_apply_check_and_rollback(server: Any, swappiness_kept: int) -> None:
    other = 13 if swappiness_kept != 13 else 17
    own = server.home / "profiles" / "serve-test.conf"
    own.parent.mkdir(parents=True, exist_ok=True)
    own.write_text(f"[main]\ninclude =\n[sysctl]\nvm.swappiness = {other}\n")
    try:
        names = {p["name"] for p in server.get("/api/profiles")}
        assert "serve-test" in names and "hone-web" in names
        info = server.get("/api/profiles/serve-test")
        item = {"section": "sysctl", "key": "vm.swappiness", "value": str(other)}
        assert info["items"] == [{**item, "source": "serve-test"}]
        status, _ = server.request("GET", "/api/profiles/..%2F..%2Fserve%2Ftoken")
        assert status == 404

        status, body = server.request("POST", "/api/profiles/serve-test/apply", token=None)
        assert status == 401 and int(SWAPPINESS.read_text()) == swappiness_kept
        status, body = server.request("POST", "/api/profiles/serve-test/apply")
        assert status == 200 and body["changed"] == 1, body
        assert int(SWAPPINESS.read_text()) == other
        active = server.get("/api/profiles/active")
        assert active["name"] == "serve-test"
        assert [i["status"] for i in active["items"]] == ["matches"]

        status, body = server.request("POST", "/api/profiles/rollback")
        assert status == 200 and body["profile"] == "serve-test", body
        assert int(SWAPPINESS.read_text()) == swappiness_kept
        assert server.get("/api/profiles/active")["name"] is None
    finally:
        own.unlink()
