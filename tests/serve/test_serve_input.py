"""Bad input to the API, in-process (FastAPI's TestClient over a private HONE_HOME, no server and
no tuning run): each gets a 4xx that names the field or header and changes nothing; no stored
value makes a 500; listings keep one shape; stop and resume act only on the study they name."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from fastapi.testclient import TestClient

from hone.serve.app import create_app
from hone.serve.config import ServeConfig
from hone.serve.gate import MAX_DEPTH, _depth
from hone.serve.runs import Run
from hone.serve.studies import _sse
from hone.storage import StudyStore

TOKEN = "t" * 32
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HONE_HOME", str(tmp_path))
    return tmp_path


@pytest.fixture
def db(home: Path) -> StudyStore:
    return StudyStore(f"sqlite:///{home}/studies.db")


@pytest.fixture
def client(home: Path, db: StudyStore) -> Iterator[TestClient]:
    # "p" is served but never started here: every request below is refused before a launch
    config = ServeConfig(token=TOKEN, projects={"p": home / "p"}, storage=db.url)
    app = create_app(config)
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as c:
        yield c


def two_studies(db: StudyStore, newest_state: str) -> None:
    """p#1 interrupted, p#2 in `newest_state`."""
    db.update(db.create("p", {}), state="interrupted")
    db.update(db.create("p", {}), state=newest_state)


def test_non_finite_stored_values_are_null_not_a_server_error(
    client: TestClient, db: StudyStore
) -> None:
    study = db.create("p", {})
    space = SimpleNamespace(domains={})
    trial = db.start_trial(study, space, {"x": 1}, "search")  # type: ignore[arg-type]
    machine = {"load1": float("nan"), "cpu_mhz": float("inf")}
    db.finish_trial(trial, score=1.0, metrics={"m": 1.0}, extra={"machine": machine})
    response = client.get("/api/studies/p%231/trials")
    assert response.status_code == 200, response.text
    assert response.json()[0]["machine"] == {"load1": None, "cpu_mhz": None}


def test_events_are_strict_json() -> None:
    data = _sse("progress", {"cv": float("nan"), "best": [float("-inf"), 1.0]}).split("data: ")[1]

    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")

    assert json.loads(data, parse_constant=refuse) == {"cv": None, "best": [None, 1.0]}


def test_an_unknown_engine_is_a_422_naming_the_field(client: TestClient) -> None:
    response = client.post("/api/studies", json={"project": "p", "engine": "bogus"}, headers=AUTH)
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["loc"] == ["body", "engine"] and "unknown engine 'bogus'" in error["msg"]
    assert client.get("/api/runs").json() == []


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", None]
)
def test_a_body_that_is_not_json_is_a_415(client: TestClient, content_type: str | None) -> None:
    headers = {**AUTH, "Content-Type": content_type} if content_type else AUTH
    response = client.post("/api/studies", content=b'{"project": "p"}', headers=headers)
    assert response.status_code == 415
    assert "Content-Type" in response.json()["detail"]
    assert client.get("/api/runs").json() == []


def test_json_types_and_empty_bodies_still_pass_the_gate(client: TestClient) -> None:
    for content_type in ("application/json; charset=utf-8", "application/merge-patch+json"):
        headers = {**AUTH, "Content-Type": content_type}
        response = client.post("/api/studies", content=b'{"project": "nope"}', headers=headers)
        assert response.status_code == 404, response.text  # parsed, then not served
    response = client.post("/api/studies/nope/stop", headers=AUTH)  # no body, no type
    assert response.status_code == 404


def test_deeply_nested_json_is_one_clear_400(client: TestClient) -> None:
    """Python's JSON parser recurses: 10,000 nested arrays are refused at the gate with one line,
    on a route that takes a body and on one that parses its own (no_body), not a 500."""
    headers = {**AUTH, "Content-Type": "application/json"}
    deep = b"[" * 10_000 + b"]" * 10_000
    nested = json.dumps({"project": "nope", "engine": [[[[[[["x"]]]]]]]}).encode()
    # the shallow bodies below reach the route: not served (404), or a body refused (422)
    for path, past_the_gate in (("/api/studies", 404), ("/api/studies/nope/stop", 422)):
        for content in (deep, b'{"project": ' + deep + b"}"):
            response = client.post(path, content=content, headers=headers)
            assert response.status_code == 400, (path, response.text[:200])
            expected = f"request body: JSON nested over {MAX_DEPTH} levels deep"
            assert response.json() == {"detail": expected}
        # brackets inside strings are text, and a few levels are the route's to judge
        text = json.dumps({"project": "[" * 100 + '"{' * 50}).encode()
        assert client.post(path, content=text, headers=headers).status_code == past_the_gate
        assert client.post(path, content=nested, headers=headers).status_code == 422, path
    # an unclosed string of 300,000 escaped quotes: the parser's error, not a gate that stalls
    unclosed = b'{"project": "' + b'\\"' * 300_000
    response = client.post("/api/studies", content=unclosed, headers=headers)
    assert response.status_code == 422 and "JSON decode error" in response.text
    assert client.get("/api/runs").json() == []


def test_the_depth_counts_brackets_outside_strings_only() -> None:
    """Against the parsed value, over random JSON whose strings hold brackets, quotes and
    backslashes (escaped by json.dumps as a client would)."""
    rng = random.Random(7)
    pieces = ["[", "]", "{", "}", '"', "\\", "a", "é"]

    def value(level: int) -> Any:
        kind = rng.random() if level < 6 else 1.0
        if kind < 0.3:
            return [value(level + 1) for _ in range(rng.randint(0, 3))]
        if kind < 0.6:
            return {text(): value(level + 1) for _ in range(rng.randint(0, 3))}
        return text()

    def text() -> str:
        return "".join(rng.choices(pieces, k=rng.randint(0, 6)))

    def depth(v: Any) -> int:
        inner = v.values() if isinstance(v, dict) else v if isinstance(v, list) else None
        return 0 if inner is None else 1 + max(map(depth, inner), default=0)

    for _ in range(2000):
        v = value(0)
        assert _depth(json.dumps(v).encode()) == depth(v), v


def test_a_served_project_removed_since_the_start_is_one_line(
    client: TestClient, home: Path
) -> None:
    """The fixture serves `p` at a folder that is not there (as if removed while serving)."""
    response = client.post("/api/studies", json={"project": "p"}, headers=AUTH)
    assert response.status_code == 409, response.text  # as for a project others can write
    assert response.json() == {"detail": f"{home / 'p'}: no such file or folder"}
    assert client.get("/api/runs").json() == []


def test_resuming_an_older_study_is_refused(client: TestClient, db: StudyStore) -> None:
    """A run resumes its project's newest study: asked for p#1, it would resume p#2."""
    two_studies(db, "interrupted")
    response = client.post("/api/studies/p%231/resume", headers=AUTH)
    assert response.status_code == 409
    assert "p#2" in response.json()["detail"]
    assert client.get("/api/runs").json() == []
    assert db.find("p#2").state == "interrupted"


def test_stop_leaves_a_run_of_another_study_alone(client: TestClient, db: StudyStore) -> None:
    two_studies(db, "running")
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        client.app.state.runs.runs["p"] = Run("p", process, study="p#2")  # type: ignore[attr-defined]
        response = client.post("/api/studies/p%231/stop", headers=AUTH)
        assert response.status_code == 409
        assert "p#2" in response.json()["detail"]
        assert process.poll() is None  # p#2's run goes on
    finally:
        process.kill()
        process.wait()


def test_listings_keep_one_shape(
    client: TestClient, db: StudyStore, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hone.cluster import restore
    from hone.journal.journal import RestoreOutcome

    bad = home / "diagnoses" / "20260101-000000-bad"
    bad.mkdir(parents=True)
    (bad / "diagnosis.hone").write_bytes(b"\x00not a diagnosis")
    (row,) = client.get("/api/diagnoses").json()
    expected = {"name", "target", "language", "created", "window_s", "samples", "finding"}
    assert set(row) == expected | {"error", "incomplete"} and row["error"] == "unreadable"

    assert client.get("/api/profiles/active").json() == {"name": None, "items": [], "error": None}

    db.update(db.create("p", {}), state="interrupted")
    here = restore.HostOutcome("", RestoreOutcome("x", "2"))
    there = restore.HostOutcome("web1", RestoreOutcome("x", "2"))
    monkeypatch.setattr(restore, "restore_project", lambda name: [here, there])
    answer: Any = client.post("/api/projects/p/restore", headers=AUTH).json()
    assert [item["host"] for item in answer["restored"]] == [None, "web1"]
    assert {frozenset(item) for item in answer["restored"]} == {
        frozenset({"name", "value", "error", "changed", "kept", "host"})
    }


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/studies/p/stop", {"force": True}),
        ("/api/studies/p/resume", [1]),
        ("/api/projects/p/restore", {"hosts": ["web1"]}),
        ("/api/profiles/rollback", {"name": "x"}),
    ],
)
def test_routes_without_a_body_refuse_one(
    client: TestClient, db: StudyStore, path: str, body: Any
) -> None:
    db.update(db.create("p", {}), state="interrupted")
    response = client.post(path, json=body, headers=AUTH)
    assert response.status_code == 422, response.text
    assert "takes no body" in response.json()["detail"]
    if isinstance(body, dict):
        assert repr(next(iter(body))) in response.json()["detail"]
    assert client.get("/api/runs").json() == []
    assert db.find("p#1").state == "interrupted"


def test_routes_without_a_body_take_an_empty_one(client: TestClient) -> None:
    headers = {**AUTH, "Content-Type": "application/json"}
    for content in (b"", b"{}", b"null", b" {} "):
        response = client.post("/api/studies/nope/stop", content=content, headers=headers)
        assert response.status_code == 404, (content, response.text)  # past the body check
    response = client.post("/api/studies/nope/stop", content=b"{", headers=headers)
    assert response.status_code == 400 and "not JSON" in response.json()["detail"]
    response = client.post("/api/studies/nope/stop", content=b"\xff{", headers=headers)
    assert response.json() == {"detail": "request body is not UTF-8 (byte 0xff at offset 0)"}


def test_best_keeps_one_shape(client: TestClient, db: StudyStore) -> None:
    study = db.create("p", {})
    empty = client.get("/api/studies/p/best").json()
    trial = db.start_trial(study, SimpleNamespace(domains={}), {"x": 1}, "search")  # type: ignore[arg-type]
    db.finish_trial(trial, score=2.0, metrics={"m": 2.0})
    searched = client.get("/api/studies/p/best").json()
    db.update(study, result={"best": {"x": 1}, "gain": {"mean": 3.0}, "outcome": "applied"})
    confirmed = client.get("/api/studies/p/best").json()
    assert [empty["source"], searched["source"], confirmed["source"]] == [
        "none",
        "search",
        "confirmed",
    ]
    assert set(empty) == set(searched) == set(confirmed)
    assert searched["trial"] == 0 and confirmed["gain"] == 3.0
