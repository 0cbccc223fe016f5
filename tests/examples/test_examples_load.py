"""Every example loads in both formats and describes the same knobs."""

from __future__ import annotations

from pathlib import Path

import pytest

from hone.project import load_project

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NAMES = ["compress", "memcached", "nginx", "redis", "postgresql", "gcc-flags"]


@pytest.mark.parametrize("name", NAMES)
def test_both_formats_load(name: str) -> None:
    hone = load_project(EXAMPLES / name)
    atune = load_project(EXAMPLES / "atune" / name)
    assert hone.name == atune.name == name
    assert (EXAMPLES / name / "README.md").is_file()
    kernel = [k for k in hone.knobs if k.actuator.kind in ("sysctl", "sysfs")]
    if name not in ("compress", "gcc-flags"):
        assert kernel, "every server example tunes at least one kernel knob"
        assert any(k.restart for k in hone.knobs), "and at least one knob needs a restart"
    assert len(atune.knobs) >= 3


def test_the_kafka_cluster_template_loads_once_filled_in(tmp_path: Path) -> None:
    """examples/kafka-cluster: broker settings restart the brokers, producer settings do not."""
    (tmp_path / "key").write_text("")
    (tmp_path / "key").chmod(0o600)  # a private key others can read is refused, as ssh does
    (tmp_path / "known_hosts").write_text("")
    fields = {
        "IDENTITY": str(tmp_path / "key"),
        "KNOWN_HOSTS": str(tmp_path / "known_hosts"),
        "BROKERS": "[b1, b2, b3]",
        "CLIENTS": "[c1]",
        "EXAMPLE": "/opt/hone",
        "DIR": "/srv/kafka",
        "LIBS": "/opt/kafka/libs",
        "RECORDS": "50000",
        "TUNING": "{budget: 40}",
        "WARMUP": "true",
    }
    text = (EXAMPLES / "kafka-cluster" / "hone.yaml.in").read_text()
    for key, value in fields.items():
        text = text.replace(f"@{key}@", value)
    (tmp_path / "hone.yaml").write_text(text)
    project = load_project(tmp_path / "hone.yaml")
    restarts = {k.name for k in project.knobs if k.restart}
    assert restarts == {
        "num_network_threads", "num_io_threads", "socket_send_buffer_bytes",
        "socket_receive_buffer_bytes",
    }  # fmt: skip
    assert project.knob("dirty_background_ratio").group == "brokers"
    assert {project.knob(n).group for n in ("batch_size", "acks")} == {"clients"}
    assert project.group_workloads["brokers"].ready.endswith("broker.sh ready /srv/kafka")
    assert project.benchmark.host == "c1" and project.benchmark.warmup


DOCS = EXAMPLES.parent / "docs"


def yaml_blocks(page: str) -> list[str]:
    """The ```yaml blocks of a page of docs/, in order."""
    text = (DOCS / page).read_text()
    return [part.split("```", 1)[0] for part in text.split("```yaml\n")[1:]]


def test_the_project_format_example_loads(tmp_path: Path) -> None:
    """docs/project-format.md's example is a project `hone check` accepts as written."""
    (tmp_path / "hone.yaml").write_text(yaml_blocks("project-format.md")[0])
    project = load_project(tmp_path / "hone.yaml")
    assert project.knob("max_conn").reference == 1024
    assert project.knob("gogc").actuator.kind == "env"
    assert project.tuning.start == [{"threads": 8, "max_conn": 4096}]


def test_the_cluster_examples_load(tmp_path: Path) -> None:
    """docs/cluster.md's project, and its metrics read on hosts, load as written."""
    (tmp_path / "keys").mkdir()
    for name in ("id_ed25519", "known_hosts"):
        (tmp_path / "keys" / name).write_text("")
        (tmp_path / "keys" / name).chmod(0o600)  # a private key others can read is refused
    project, metrics = yaml_blocks("cluster.md")
    head = project.split("\nmetrics:\n", 1)[0]
    (tmp_path / "cluster.yaml").write_text(head + "\n" + metrics)
    loaded = load_project(tmp_path / "cluster.yaml")
    assert loaded.knob("io_threads").group == "brokers" and loaded.knob("io_threads").restart
    assert {m.name for m in loaded.metrics} == {"mb_s", "broker_cpu", "b1_written"}
