"""`hone diagnose --from FILE` with a file that holds no stacks: one line naming the file and
line, not a report of a diagnosis that found nothing (exit code 0)."""

from __future__ import annotations

from pathlib import Path


def test_an_empty_file_is_refused(tmp_path: Path, hone_run) -> None:
    empty = tmp_path / "run.folded"
    empty.write_text("\n")
    assert hone_run("diagnose", "--from", str(empty)).one_line() == (
        f"hone: {empty}: empty: no stacks to diagnose"
    )
    assert not list(tmp_path.glob("*/index.html"))


def test_a_line_that_is_not_a_stack_is_named(tmp_path: Path, hone_run) -> None:
    bad = tmp_path / "run.folded"
    bad.write_text("app;main 3\nnot a stack\n")
    line = hone_run("diagnose", "--from", str(bad)).one_line()
    assert line.startswith(f"hone: {bad}:2: expected 'frame;frame;... count'")


def test_a_long_line_is_shortened_in_the_message(tmp_path: Path, hone_run) -> None:
    """A CSV given by mistake: its header is quoted in part, not its 1,400 characters."""
    bad = tmp_path / "metrics.csv"
    bad.write_text(",".join(f"CPU.STAT.metric{i}" for i in range(100)) + "\n")
    line = hone_run("diagnose", "--from", str(bad)).one_line()
    assert line.startswith(f"hone: {bad}:1: expected 'frame;frame;... count', got 'CPU.STAT.")
    assert line.endswith("...' (not a hone profile or folded stacks)") and len(line) < 250
