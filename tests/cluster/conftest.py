"""A 3-host test bed (network namespaces, an sshd in each) shared by the cluster tests."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.cluster.netns import Testbed, available  # noqa: E402

CONFIG = "threads = 4\nbatch = 100\n# kept as it is\n"


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Testbed]:
    why = available()
    if why:
        pytest.skip(f"no namespace test bed: {why}")
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


def project_yaml(bed: Testbed, benchmark: str = "echo score: 1") -> str:
    """Three knobs on the group `brokers` (all three hosts); the benchmark on h1."""
    conf = bed.mount / "app.conf"
    return (
        "name: fanout\n" + bed.hosts_yaml({"brokers": [0, 1, 2]}) + "knobs:\n"
        "  backlog: {type: int, range: [128, 1024], sysctl: net.core.somaxconn, group: brokers}\n"
        f"  threads: {{type: int, range: [1, 16], config: {{file: {conf}, key: threads}},"
        " group: brokers}\n"
        f"  batch: {{type: int, range: [10, 1000], config: {{file: {conf}, key: batch}},"
        " group: brokers}\n"
        f"benchmark: {{command: '{benchmark}', host: h1}}\n"
        "metrics:\n  score: {pattern: 'score: (\\d+)', direction: maximize}\n"
        "tuning: {engine: random, budget: 3, baseline: 1, seed: 1, apply: never}\n"
    )
