"""HONE_WORKDIR, a project's private folder for its data, stays inside hone's state directory
whatever the project is named: an A-Tune project's name is free text, and `../../x` or `/`
taken as a path led the folder (and the commands that write or clean it) out of it."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest


def atune_pair(folder: Path, name: str) -> None:
    """A-Tune's two files in folder/p (its commands run in the folder above); the workload's
    start writes down the HONE_WORKDIR it was given."""
    (folder / "level").write_text("1\n")
    (folder / "p").mkdir()
    (folder / "p" / "p_server.yaml").write_text(
        textwrap.dedent(f"""\
        project: {name!r}
        maxiterations: 2
        startworkload: 'printf %s "$HONE_WORKDIR" > {folder}/workdir'
        stopworkload: "true"
        object:
          - name: "level"
            info:
              desc: "a number in a file"
              get: "cat level"
              set: "echo $value > level"
              needrestart: "true"
              type: "discrete"
              dtype: "int"
              scope: [1, 2]
              step: 1
        """)
    )
    (folder / "p" / "p_client.yaml").write_text(
        textwrap.dedent(f"""\
        project: {name!r}
        engine: "random"
        iterations: 1
        benchmark: "echo seconds 1.5"
        evaluations:
          - name: "seconds"
            info:
              get: "echo '$out' | awk '{{print $2}}'"
              type: "positive"
              weight: 100
        """)
    )


@pytest.mark.parametrize("name", ["../../escaped", "/", "redis 6.2"])
def test_the_work_folder_stays_in_the_state_directory(
    tmp_path: Path, hone_home: Path, hone_cli, name: str
) -> None:
    atune_pair(tmp_path, name)
    result = hone_cli("tune", str(tmp_path / "p"), "--apply", "never", "--no-why")
    assert result.returncode == 0, result.stderr
    workdir = Path((tmp_path / "workdir").read_text())
    assert workdir.resolve().parent == (hone_home / "work").resolve(), workdir
    assert workdir.is_dir() and not (hone_home.parent / "escaped").exists()
    # no space or shell character: `rm -rf $HONE_WORKDIR/data` unquoted stays one word
    assert re.fullmatch(r"[A-Za-z0-9_.-]+", workdir.name), workdir
