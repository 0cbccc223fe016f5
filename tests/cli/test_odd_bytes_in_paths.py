"""A path is bytes, not always UTF-8 (`bad\\xffdir`): Python gives it to hone with a
surrogate for the odd byte, and the strict stdout of a UTF-8 locale such as en_US.UTF-8
(here PYTHONIOENCODING=utf-8, which sets the same) ended `hone check` in a UnicodeEncodeError
traceback after the first words. The bytes are now written back as they were."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _check(folder: bytes, encoding: str, hone_home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HONE_HOME": str(hone_home), "PYTHONIOENCODING": encoding}
    return subprocess.run(
        [sys.executable.encode(), b"-m", b"hone", b"check", folder],
        capture_output=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )


def test_check_prints_a_path_with_a_byte_that_is_not_utf8(tmp_path: Path, hone_home: Path) -> None:
    folder = os.fsencode(tmp_path) + b"/bad\xffdir"
    shutil.copytree(ROOT / "examples" / "compress", os.fsdecode(folder))
    done = _check(folder, "utf-8", hone_home)
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr.decode()
    first = done.stdout.splitlines()[0]
    assert first == b"project compress (" + folder + b"/hone.yaml)"
    assert done.stdout.rstrip().endswith(b"apply auto")  # the whole output, not its start

    ascii_only = _check(folder, "ascii", hone_home)  # a terminal that holds no such byte
    assert ascii_only.returncode == 0, ascii_only.stderr.decode()
    assert ascii_only.stdout.splitlines()[0].endswith(b"/bad?dir/hone.yaml)")
