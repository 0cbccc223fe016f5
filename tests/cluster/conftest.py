"""A 3-host test bed (network namespaces, an sshd in each) shared by the cluster tests."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from cluster_bed import CONFIG  # noqa: E402

from benchmarks.cluster.netns import Testbed, available  # noqa: E402


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Testbed]:
    why = available()
    assert not why, f"no namespace test bed: {why} (scripts/setup installs what it needs)"
    testbed = Testbed(tmp_path_factory.mktemp("bed"), 3).up()
    try:
        yield testbed
    finally:
        testbed.down()


@pytest.fixture
def hosts(bed: Testbed) -> Testbed:
    """The bed with every host's config file and somaxconn at their starting values."""
    for i in range(bed.count):
        bed.read_only(i, False)
        (bed.data(i) / "app.conf").write_text(CONFIG)
        (bed.data(i) / "app.conf").chmod(0o640)
        bed.set_sysctl(i, "net.core.somaxconn", "4096")
    return bed
