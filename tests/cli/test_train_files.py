"""CSV files `hone train` reads that are not what `hone collect -o` writes: a spreadsheet's
byte-order mark, another program's CSV with the two label columns."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from hone.analyze.dataset import load_runs
from hone.collect import ATUNE_METRICS
from hone.errors import HoneError

HEADER = "CPU.STAT.usr,CPU.STAT.util,workload.type,workload.appname\n"


def test_a_byte_order_mark_keeps_the_first_column(tmp_path: Path) -> None:
    """Saved by a spreadsheet, the file began with U+FEFF: its first column (CPU.STAT.usr in
    A-Tune's layout) was read as missing in every row and trained on as such."""
    path = tmp_path / "excel.csv"
    path.write_text("\ufeff" + HEADER + "41,50,web,nginx\n43,52,web,nginx\n", encoding="utf-8")
    (run,) = load_runs(path, 1.0)
    usr = run.values[:, ATUNE_METRICS.index("CPU.STAT.usr")]
    assert list(usr) == [41.0, 43.0]
    assert run.cls == "web"


def test_a_csv_without_a_metric_column_is_named(tmp_path: Path, hone_run) -> None:
    """Two label columns and nothing else of A-Tune's layout: every metric missing, a model
    trained on nothing, and `hone train` said it had saved it."""
    path = tmp_path / "sales.csv"
    path.write_text("region,total,workload.type,workload.appname\n" + "n,5,web,nginx\n" * 50)
    line = hone_run("train", str(path)).one_line()
    assert line.startswith(f"hone: {path}: no metric column (CPU.STAT.usr, ")
    assert not math.isnan(  # one metric column is a collection (a CSV cut down by hand)
        load_runs(_one_metric(tmp_path), 1.0)[0].values[0, ATUNE_METRICS.index("CPU.STAT.util")]
    )


def _one_metric(folder: Path) -> Path:
    path = folder / "util.csv"
    path.write_text("CPU.STAT.util,workload.type,workload.appname\n50,web,nginx\n")
    return path


def test_a_file_named_twice_is_one_run(tmp_path: Path, hone_run) -> None:
    """`hone train runs/ runs/a.csv` trained on a.csv twice and said `2 runs`: every run of a
    class weighs the same, so the repeated one outweighed the others."""
    runs = tmp_path / "runs"
    runs.mkdir()
    for name, label in (("a", "web"), ("b", "storage")):
        rows = "".join(f"{40 + i % 7},{50 + i % 5},{label},x\n" for i in range(50))
        (runs / f"{name}.csv").write_text(HEADER + rows)
    again = str(runs / ".." / "runs" / "a.csv")
    ran = hone_run("train", str(runs), str(runs / "a.csv"), again, "-o", str(tmp_path / "m.pkl"))
    assert ran.code == 0, ran.stderr
    assert [line.split()[:2] for line in ran.stdout.splitlines()[:2]] == [
        ["storage", "1"], ["web", "1"]]  # fmt: skip


def test_rows_without_a_label_are_named(tmp_path: Path) -> None:
    """Both label cells empty: a class named '' was trained, and `hone analyze` then named
    the workload in blank."""
    path = tmp_path / "blank.csv"
    path.write_text(HEADER + "41,50,web,nginx\n42,51,,\n43,52, ,\n")
    with pytest.raises(HoneError, match=r"no label: workload\.type and workload\.appname") as error:
        load_runs(path, 1.0)
    assert (error.value.file, error.value.line) == (str(path), 3)
