"""Rebuild the pool tables from fetched copies of their public repositories (provenance).

    python -m benchmarks.tuners.pools.build PROMISETUNE_GIT MOOT_GIT

Each argument is a git directory (bare is fine). The tables are copied as they are, gzipped;
a table whose knobs and chosen objective repeat an earlier one's exactly is skipped (moot
re-publishes some of PromiseTune's tables under other names), and pools.yaml lists what was
kept, with its system (what the split keeps on one side) and source."""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import re
import statistics
import subprocess
import sys
from pathlib import Path

import yaml

from benchmarks.tuners.pools.table import read_table

HERE = Path(__file__).resolve().parent
# PromiseTune marks every target minimised (`$<`), but its own results files hold redis's and
# storm's throughput negated: its experiments maximised them, and so does the suite.
MAXIMISED = {"redis", "storm"}
# PromiseTune's results files per system (results/<TUNER>/<stem><run>.csv)
RESULTS = {
    "7z": "7z",
    "BDBC": "BDBC_AllNumeric",
    "dconvert": "dconvert",
    "deeparch": "deeparch",
    "exastencils": "exastencils",
    "HSQLDB": "HSQLDB",
    "LLVM": "LLVM_AllNumeric",
    "PostgreSQL": "PostgreSQL",
    "redis": "redis",
    "storm": "stormm",
    "x264": "x264",
}
PUBLISHED_BUDGET = 100
PROMISETUNE = "Code/Data/"
MOOT = "optimize/config/"
# The system each moot table measures (FLASH's SS-* names hide it; the knob names tell).
SYSTEMS = {
    "Apache_AllMeasurements": "apache",
    "HSMGP_num": "hsmgp",
    "SQL_AllMeasurements": "sqlite",
    "X264_AllMeasurements": "x264",
    "SS-A": "storm",
    "SS-B": "ss-b",
    "SS-C": "storm",
    "SS-D": "storm",
    "SS-E": "storm",
    "SS-F": "storm",
    "SS-G": "storm",
    "SS-H": "ss-h",
    "SS-I": "storm",
    "SS-J": "storm",
    "SS-K": "storm",
    "SS-L": "llvm",
    "SS-M": "hsqldb",
    "SS-N": "x264",
    "SS-O": "mysql",
    "SS-P": "llvm",
    "SS-Q": "libvpx",
    "SS-R": "libvpx",
    "SS-S": "storm",
    "SS-T": "lrzip",
    "SS-U": "x264",
    "SS-V": "mongodb",
    "SS-W": "llvm",
    "SS-X": "exastencils",
    "rs-6d-c3_obj1": "storm",
    "rs-6d-c3_obj2": "storm",
    "sol-6d-c2-obj1": "storm",
    "wc+rs-3d-c4-obj1": "storm",
    "wc+sol-3d-c4-obj1": "storm",
    "wc+wc-3d-c4-obj1": "storm",
    "wc-6d-c1-obj1": "storm",
}


def _files(git: Path, folder: str) -> list[str]:
    out = subprocess.run(
        ["git", f"--git-dir={git}", "ls-tree", "--name-only", "HEAD", folder],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return sorted(p for p in out.split() if p.endswith(".csv"))


def _git(git: Path, *args: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={git}", *args], check=True, capture_output=True, text=True
    ).stdout


def published(git: Path) -> dict:
    """Per tuner and system, the best value among each run's first 100 measurements (its
    protocol: budget 100, noise-free, best found), and their median over the runs."""
    files = _git(git, "ls-tree", "-r", "--name-only", "HEAD", "results").split()
    out: dict = {}
    for tuner in sorted({f.split("/")[1] for f in files}):
        for system, stem in RESULTS.items():
            runs = [f for f in files if re.fullmatch(rf"results/{tuner}/{stem}\d+\.csv", f)]
            best = []
            for run in runs:
                rows = list(csv.reader(io.StringIO(_git(git, "show", f"HEAD:{run}"))))
                values = [float(v) for v in rows[2][:PUBLISHED_BUDGET]]
                best.append(-min(values) if system in MAXIMISED else min(values))
            if best:
                out.setdefault(tuner, {})[system] = {
                    "median": float(statistics.median(best)),
                    "runs": len(best),
                    "best": [float(f"{b:.10g}") for b in best],
                }
    return out


def _commit(git: Path) -> str:
    out = subprocess.run(
        ["git", f"--git-dir={git}", "rev-parse", "HEAD"], check=True, capture_output=True
    )
    return out.stdout.decode().strip()


def main() -> None:
    promisetune, moot = (Path(a) for a in sys.argv[1:3])
    sources = [
        (promisetune, "ideas-labo/PromiseTune", p, Path(p).stem.lower())
        for p in _files(promisetune, PROMISETUNE)
    ]
    sources += [(moot, "timm/moot", p, SYSTEMS[Path(p).stem]) for p in _files(moot, MOOT)]
    index, seen = {}, {}
    for git, repo, path, system in sources:
        blob = subprocess.run(
            ["git", f"--git-dir={git}", "show", f"HEAD:{path}"], capture_output=True
        )
        if blob.returncode != 0 or not blob.stdout:
            print(f"{repo}:{path}: absent from the snapshot, skipped")
            continue
        name = Path(path).stem
        table = read_table(io.BytesIO(blob.stdout), name)
        digest = hashlib.sha256(table.fingerprint()).hexdigest()
        if digest in seen:
            print(f"{repo}:{path}: the same table as {seen[digest]}, skipped")
            continue
        seen[digest] = name
        (HERE / f"{name}.csv.gz").write_bytes(gzip.compress(blob.stdout, mtime=0))
        maximised = repo == "ideas-labo/PromiseTune" and system in MAXIMISED
        index[name] = {
            "system": system,
            "source": f"{repo}@{_commit(git)[:12]}:{path}",
            "objective": table.objective,
            "minimise": table.minimize and not maximised,
            "rows": table.rows,
            "knobs": len(table.knobs),
        }
    (HERE / "pools.yaml").write_text(yaml.safe_dump(index, sort_keys=True))
    figures = {
        "source": f"ideas-labo/PromiseTune@{_commit(promisetune)[:12]}:results/",
        "protocol": "median over runs of the best of each run's first 100 measurements",
        "tuners": published(promisetune),
    }
    (HERE / "promisetune-published.yaml").write_text(yaml.safe_dump(figures, sort_keys=False))


if __name__ == "__main__":
    main()
