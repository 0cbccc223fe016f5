"""A point of the fault figure (benchmarks/cluster/faults.py), kept asserted: a kill -9 of the
controller during a roll-back (one host refused the trial's value; the others, already changed,
were being put back). tests/tune/test_worker_faults.py keeps a worker's point."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.cluster.faults import controller_point
from benchmarks.cluster.netns import Testbed


@pytest.mark.parametrize("point", ["roll-back"])
def test_kill_9_of_the_controller_then_restore(
    tmp_path: Path, bed: Testbed, hone_home: Path, point: str
):
    outcome = controller_point(bed, tmp_path / "run", point, hone_home)
    assert outcome.reached, outcome.detail  # hone was killed at that point
    assert outcome.changed  # the kill left hosts changed: the restore had work to do
    assert outcome.restored, outcome.detail  # every knob on every host back, journals archived
