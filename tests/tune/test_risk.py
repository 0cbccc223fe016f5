"""Risky knobs: the catalogue marks the well-known ones, a project may mark or unmark its own,
and a real SQLite study applies `synchronous=off` only with --allow-risk, reporting both gains."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from hone.errors import HoneError
from hone.project import load_project

ROOT = Path(__file__).resolve().parents[2]
SQLITE = ROOT / "examples" / "sqlite"


def test_catalogue_marks_known_settings_in_both_formats() -> None:
    sqlite = load_project(SQLITE)
    sync = sqlite.knob("synchronous").risk
    assert sync is not None and sync.kinds_of("off", "full") == ["durability"]
    assert sync.kinds_of("OFF", "full") == ["durability"] and sync.kinds_of("0", "full")
    assert sync.kinds_of("normal", "full") == []
    assert sync.kinds_of("off", "off") == []  # what the machine already ran adds no risk
    assert sqlite.knob("cache_size").risk is None
    atune = load_project(ROOT / "examples" / "atune" / "postgresql")
    commit = atune.knob("synchronous_commit").risk
    assert commit is not None and commit.kinds_of("local", "on") == ["durability"]
    assert atune.knob("shared_buffers").risk is None


def _project(tmp_path: Path, risk: str) -> Path:
    path = tmp_path / "hone.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        name: risk-format
        knobs:
          mode:
            type: categorical
            values: [safe, fast, unsafe]
            shell: {{get: echo safe, set: "true"}}
            risk: {risk}
          overcommit:
            type: categorical
            values: ["0", "1"]
            sysctl: vm.overcommit_memory
        benchmark: "echo 1"
        metrics: {{x: {{pattern: '(\\d+)', direction: maximize}}}}
        """)
    )
    return path


def test_project_risk_format(tmp_path: Path) -> None:
    project = load_project(_project(tmp_path, "{durability: [unsafe], security: any}"))
    risk = project.knob("mode").risk
    assert risk is not None
    assert risk.kinds_of("fast", "safe") == ["security"]
    assert risk.kinds_of("unsafe", "safe") == ["security", "durability"]
    overcommit = project.knob("overcommit").risk  # from the catalogue, by its sysctl key
    assert overcommit is not None and overcommit.kinds_of("1", "0") == ["availability"]
    assert load_project(_project(tmp_path, "none")).knob("mode").risk is None
    assert load_project(_project(tmp_path, "[availability]")).knob("mode").risk.whole == (
        "availability",
    )


@pytest.mark.parametrize(
    ("risk", "message"),
    [
        ("{durability: [missing]}", "risky value 'missing' is not one of its values"),
        ("speed", "unknown risk 'speed'"),
        ("{durability: 3}", "give a list of risky values"),
    ],
)
def test_bad_risk_names_file_line_and_key(tmp_path: Path, risk: str, message: str) -> None:
    with pytest.raises(HoneError) as caught:
        load_project(_project(tmp_path, risk))
    text = str(caught.value)
    assert message in text and "hone.yaml:7" in text and "risk" in text


def _settings(hone_home: Path) -> str:
    return (hone_home / "work" / "sqlite" / "sqlite.conf").read_text()


def test_sqlite_risky_winner_needs_allow_risk(
    hone_cli, hone_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SQLITE_COMMITS", "10")  # 10 fsync-bound commits: a quick benchmark
    args = [
        "tune",
        str(SQLITE),
        "--seed",
        "1",
        "--budget",
        "6",
        "--baseline",
        "2",
        "--max-repeats",
        "3",
        "--no-why",  # the winner's profile is test_why's subject
    ]
    held = hone_cli(*args)
    assert held.returncode == 0, held.stderr
    settings = _settings(hone_home)
    assert "synchronous = off" not in settings and "journal_mode = memory" not in settings
    assert "needs --allow-risk" in held.stdout and "safe winner" in held.stdout
    shown = json.loads(hone_cli("show", "sqlite#1", "--json").stdout)
    risk = shown["study"]["attrs"]["result"]["risk"]
    assert risk["allowed"] is False
    assert risk["risky"]["config"]["synchronous"] == "off" or (
        risk["risky"]["config"]["journal_mode"] == "memory"
    )
    assert risk["risky"]["gain"]["mean"] > 100  # the risky winner's gain is reported
    safe = risk["safe"]["config"]
    assert safe["synchronous"] != "off" and safe["journal_mode"] != "memory"
    assert shown["study"]["attrs"]["result"]["best"] == safe
    assert "risky winner" in hone_cli("show", "sqlite#1").stdout

    assert hone_cli("restore", "sqlite").returncode == 0
    # --apply always: the risky winner's 30-fold gain is certain, but on a busy machine three
    # rounds of 10 fsync-bound commits may not say so; the decision under test is risk's
    allowed = hone_cli(*args, "--allow-risk", "--apply", "always")
    assert allowed.returncode == 0, allowed.stderr
    settings = _settings(hone_home)
    assert "synchronous = off" in settings or "journal_mode = memory" in settings
    risk = json.loads(hone_cli("show", "sqlite#2", "--json").stdout)["study"]["attrs"]["result"][
        "risk"
    ]
    assert risk["allowed"] is True and risk["safe"]["gain"] is not None
