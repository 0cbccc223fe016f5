"""One point of the fault figure (benchmarks/cluster/faults.py), kept asserted: a worker killed
with kill -9 while it reads its trial's metrics (the report), in a real PostgreSQL server."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.cluster.faults import worker_point  # noqa: E402


def test_kill_9_of_a_worker_during_its_report(postgres_url: str, tmp_path: Path) -> None:
    outcome = worker_point(postgres_url, tmp_path, "during-report")
    assert outcome.reached and outcome.changed, outcome.detail
    # restored by `hone restore`, and the worker started again failed the cut-off trial and
    # finished the study
    assert outcome.restored, outcome.detail
