"""The peers added beside the original ones: FLASH as published, the torch and out-of-process
peers skipped with a line saying how to set them up, and auto's best found set against
PromiseTune's published runs."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import numpy as np

from benchmarks.tuners.harness import RunResult, run
from benchmarks.tuners.pool import POOLS, PoolTask
from benchmarks.tuners.process_peer import missing as missing_process
from benchmarks.tuners.promisetune import against_promisetune
from benchmarks.tuners.torch_peers import missing as missing_torch

ROOT = Path(__file__).resolve().parents[2]


def grid_table(tmp_path: Path, unit: int = 1) -> PoolTask:
    """A pool of 64 rows whose best row is at threads 32, batch 8; `unit` (a power of two, so
    that the readings scale exactly) multiplies every reading."""
    lines = ["threads,batch,ops+"]
    for threads in (1, 2, 4, 8, 16, 32, 48, 64):
        for batch in (1, 2, 4, 8, 16, 32, 64, 128):
            ops = 1000 - (np.log2(threads) - 5) ** 2 * 40 - (np.log2(batch) - 3) ** 2 * 25
            lines.append(f"{threads},{batch},{float(round(ops, 1)) * unit!r}")
    path = tmp_path / f"grid-{unit}.csv.gz"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    return PoolTask(path)


def test_flash_proposes_unmeasured_pool_rows_and_exploits_its_tree(tmp_path: Path) -> None:
    task = grid_table(tmp_path)
    result = run(task, "flash", seed=0, budget=45, baseline=False)
    assert result.measured[-1] == 0.0  # it found the best row
    assert result.measured[44] <= result.measured[29]  # the tree did not lose ground
    # beyond the 15 random starts (a third of a 45 budget) its proposals are chosen, not
    # random: it reaches the optimum before random search in most seeds
    flash = [run(task, "flash", seed=s, budget=40, baseline=False).measured for s in range(5)]
    rand = [run(task, "random", seed=s, budget=40, baseline=False).measured for s in range(5)]
    first = lambda m: next((i for i, g in enumerate(m) if g == 0.0), 99)  # noqa: E731
    assert np.median([first(m) for m in flash]) < np.median([first(m) for m in rand])


def test_smac_tunes_readings_in_the_millions_as_in_the_thousands(tmp_path: Path) -> None:
    """Readings of 4 million ops/s, noise-free (the default's three baseline readings tie for
    the lowest cost): SMAC3's log-scaled encoder takes log(0) there (its 1e-10 margin is below
    a float's step at that size) and its forest raises on the first proposal. Told relative
    to the default's reading, it makes the very same decisions as on the table in thousands."""
    thousands = run(grid_table(tmp_path), "smac-hpo", seed=0, budget=10)
    millions = run(grid_table(tmp_path, unit=4096), "smac-hpo", seed=0, budget=10)
    assert millions.regrets == thousands.regrets
    assert millions.measured == thousands.measured
    assert thousands.regrets[-1] < thousands.regrets[0]  # it tuned: not the default throughout


def test_absent_peers_are_skipped_with_how_to_set_them_up(monkeypatch) -> None:
    monkeypatch.delenv("HONE_PEER_OPENBOX", raising=False)
    assert "HONE_PEER_OPENBOX" in missing_process("openbox")
    monkeypatch.setenv("HONE_PEER_OPENBOX", "/nonexistent/python")
    assert missing_process("openbox")
    assert missing_process("auto") is None and missing_torch("auto") is None
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.tuners",
            "--task",
            str(POOLS / "SS-A.csv.gz"),
            "--tuners",
            "random,hebo",
            "--budget",
            "3",
            "--output",
            "/dev/null",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "skipped: hebo runs in an environment of its own: set HONE_PEER_HEBO" in out.stderr


def test_auto_is_set_against_promisetunes_runs_one_sided(tmp_path: Path) -> None:
    task = grid_table(tmp_path)  # maximised; optimum 1000
    runs = {
        (task.name, "auto"): [
            RunResult(task.name, "auto", s, [0.0], [0.0], [], [g])
            for s, g in enumerate((0.0, 0.0, 0.001))
        ]
    }
    theirs = {task.name: {"best": [990.0] * 10 + [1000.0] * 5}}
    lines = against_promisetune([task], runs, 1, theirs)
    row = next(line for line in lines if line.startswith(f"| {task.name} |"))
    assert "as good or better" in row
    worse = {task.name: {"best": [1000.0] * 30}}
    runs[task.name, "auto"] = [
        RunResult(task.name, "auto", s, [0.0], [0.0], [], [0.01]) for s in range(10)
    ]
    row = next(
        line
        for line in against_promisetune([task], runs, 1, worse)
        if line.startswith(f"| {task.name} |")
    )
    assert row.endswith("| worse |")
