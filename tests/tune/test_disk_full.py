"""A disk that fills up in the middle of a run: hone's state directory on a small tmpfs, filled
by the benchmark. The run stops with one line, every knob is back, and nothing is lost."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
from forked_hone import run_hone


@pytest.fixture
def small_home(small_disk) -> Path:
    return small_disk("4m", "home")


def test_a_full_disk_mid_run_leaves_every_knob_back(tmp_path: Path, small_home: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "level.txt").write_text("5\n")
    # the fourth benchmark run fills hone's state directory (HONE_WORKDIR lives there)
    (project / "bench.sh").write_text(
        textwrap.dedent("""\
        n=$(cat runs 2>/dev/null || echo 0); echo $((n + 1)) > runs
        if [ "$n" -eq 3 ]; then dd if=/dev/zero of="$HONE_WORKDIR/fill" bs=64k 2>/dev/null; fi
        echo "score: $(cat level.txt)"
        """)
    )
    (project / "hone.yaml").write_text(
        textwrap.dedent("""\
        name: full
        knobs:
          level:
            type: int
            range: [1, 9]
            config: {file: level.txt, format: regex, pattern: '^(\\d+)$', restart: false}
        benchmark: {command: sh bench.sh, timeout: 20}
        metrics:
          score: {pattern: 'score: (\\S+)', direction: maximize}
        tuning: {engine: random, budget: 8, baseline: 1, apply: never, seed: 3}
        """)
    )
    env = {**os.environ, "HONE_HOME": str(small_home)}
    result = run_hone("tune", str(project), env=env, cwd=Path.cwd(), timeout=120)
    assert (project / "runs").read_text().strip() != "0"
    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert (project / "level.txt").read_text() == "5\n"
    (small_home / "work" / "full" / "fill").unlink()
    again = run_hone("restore", "full", env=env, cwd=Path.cwd())
    assert again.returncode == 0 and "Traceback" not in again.stderr
    assert (project / "level.txt").read_text() == "5\n"


def test_a_full_disk_before_the_first_study_is_named(small_home: Path) -> None:
    """Optuna's own words for it blame the data ('exceeding max length'); the line says why."""
    with open(small_home / "fill", "wb") as fill:
        try:
            while True:
                fill.write(b"\0" * 65536)
        except OSError:
            fill.truncate(fill.tell() - 50_000)  # room for the file, not for Optuna's schema
    env = {**os.environ, "HONE_HOME": str(small_home / "state")}
    result = run_hone("studies", env=env, cwd=Path.cwd())
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"hone: cannot open study storage sqlite:///{small_home}/state/studies.db:"
        " database or disk is full"
    ]
