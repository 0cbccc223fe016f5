"""`hone train` never replaces a model file unless told to (--force), never writes over its own
training data, and a model file is written whole or not at all."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from hone.analyze.dataset import BUILTIN_DATA

ROOT = Path(__file__).resolve().parents[2]
#: two runs of two classes: the smallest data a model can be trained on (seconds)
DATA = [str(BUILTIN_DATA / "compute--gcc-1.csv.gz"), str(BUILTIN_DATA / "web--nginx-1.csv.gz")]
OLD = b"the production model"


def test_an_existing_model_file_is_kept_unless_forced(tmp_path: Path, hone_run) -> None:
    model = tmp_path / "prod.pkl"
    model.write_bytes(OLD)
    line = hone_run("train", *DATA, "-o", str(model)).one_line()
    assert line == f"hone: {model}: exists: give --force to replace it, or write elsewhere"
    assert model.read_bytes() == OLD

    ran = hone_run("train", *DATA, "-o", str(model), "--force")
    assert ran.code == 0, ran.stderr
    from hone.analyze.model import load

    assert load(model).classes == ["compute", "web"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prod.pkl"]  # no temporary file left


def test_a_model_named_like_an_existing_one_is_kept(hone_home: Path, hone_run) -> None:
    model = hone_home / "analyze" / "models" / "prod.pkl"
    model.parent.mkdir(parents=True)
    model.write_bytes(OLD)
    line = hone_run("train", *DATA, "--name", "prod").one_line()
    assert line == f"hone: {model}: exists: give --force to replace it, or write elsewhere"
    assert model.read_bytes() == OLD


def test_the_model_is_never_written_over_its_data_or_into_a_folder(
    tmp_path: Path, hone_run
) -> None:
    data = tmp_path / "runs.csv.gz"
    data.write_bytes((BUILTIN_DATA / "web--nginx-1.csv.gz").read_bytes())
    before = data.read_bytes()
    line = hone_run("train", DATA[0], str(data), "-o", str(data), "--force").one_line()
    assert line == f"hone: {data}: is a training file: write the model elsewhere"
    assert data.read_bytes() == before
    line = hone_run("train", *DATA, "-o", str(tmp_path), "--force").one_line()
    assert line == f"hone: {tmp_path}: Is a directory"


def test_a_write_cut_short_leaves_the_old_model_and_no_partial_file(tmp_path: Path) -> None:
    """The kernel cuts the write (a file size limit, as a full disk would): the old model stays
    as it was, no half-written file is left beside it, and the error is one line."""
    model = tmp_path / "prod.pkl"
    model.write_bytes(OLD)
    script = textwrap.dedent(f"""\
        import resource, signal, sys
        from pathlib import Path
        from hone.analyze.model import save
        from hone.errors import HoneError
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails: EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        try:
            save(b"x" * 100_000, Path({str(model)!r}))
        except HoneError as exc:
            sys.exit(f"hone: {{exc}}")
        """)
    ran = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert ran.returncode == 1 and ran.stderr == f"hone: {model}: File too large\n", ran.stderr
    assert model.read_bytes() == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prod.pkl"]


def test_json_lists_the_classes_the_text_does(tmp_path: Path, hone_run) -> None:
    """`--json`: one document on stdout with each class, its runs and its profile, as the text
    gives them, and where the model went."""
    text = hone_run("train", *DATA, "-o", str(tmp_path / "a.pkl"))
    assert text.code == 0, text.stderr
    ran = hone_run("train", *DATA, "-o", str(tmp_path / "b.pkl"), "--json")
    assert ran.code == 0 and ran.stderr == "", ran.stderr
    document = json.loads(ran.stdout)
    assert document["model"] == str(tmp_path / "b.pkl")
    rows = [f"{c['class']:20s} {c['runs']:3d} runs  profile {c['profile'] or '-'}"
            for c in document["classes"]]  # fmt: skip
    assert rows == text.stdout.splitlines()[:-1] and len(rows) == 2
