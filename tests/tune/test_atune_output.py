"""`hone tune --atune-output`: A-Tune's console lines, in the shapes tools take apart, for every
trial (a failed one included); what A-Tune has no line for goes to stderr."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

#: How the openEuler PilotGo A-Tune plugin reads an evaluation line: (values)(rate).
EVALUATION = re.compile(r"The \d+th evaluation value: \(([^)]+)\)\(([^)]+)\)")
USED = re.compile(r" Used time: (\S+), Total Time: (\S+), Best Performance: \(([^)]+)\)")


def atune_pair(tmp_path: Path) -> Path:
    """A-Tune's layout: commands run in the folder above the project's folder."""
    (tmp_path / "level.txt").write_text("1\n")
    folder = tmp_path / "levels"
    folder.mkdir()
    (folder / "levels_server.yaml").write_text(
        textwrap.dedent("""\
        project: "levels"
        maxiterations: 10
        object:
          - name: "level"
            info:
              get: "cat level.txt"
              set: "echo $value > level.txt"
              needrestart: "false"
              type: "discrete"
              scope: [1, 3]
              dtype: "int"
        """)
    )
    (folder / "levels_client.yaml").write_text(
        textwrap.dedent("""\
        project: "levels"
        engine: "gridsearch"
        iterations: 3
        split_count: 3
        benchmark: "l=$(cat level.txt); [ $l -ne 2 ] || exit 1; echo tps $((100 * l))"
        evaluations:
          - name: "tps"
            info:
              get: "echo '$out' | awk '{print $2}'"
              type: "negative"
              weight: 100
        """)
    )
    return folder


def test_every_trial_prints_lines_that_parse_a_failed_one_too(tmp_path: Path, hone_cli) -> None:
    folder = atune_pair(tmp_path)
    done = hone_cli("tune", str(folder), "--atune-output", "--apply", "never", "--no-why")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    evaluations = [line for line in lines if "th evaluation value" in line]
    assert len(evaluations) == 3
    assert all(EVALUATION.search(line) for line in evaluations), evaluations
    assert sum(line.endswith(": (tps=NaN)(NaN%)") for line in evaluations) == 1  # level 2
    assert re.search(r"hone: trial \d failed: .*exited 1", done.stderr), done.stderr
    assert "hone: restored: --apply never" in done.stderr
    # used time runs from the start, as A-Tune's does: it equals the total on a fresh run
    used = [USED.match(line) for line in lines if line.startswith(" Used time")]
    assert used and all(m is not None and m[1] == m[2] for m in used), lines
    assert lines[-1] == " Tuning Finished"
