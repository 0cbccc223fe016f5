"""The classifier on real data: A-Tune's dataset and the runs hone collected here load into
labelled runs; features are scale-free; a run held out of training is named right; `hone
train` makes a model that `hone analyze --model` uses; bad input gets one line."""

from __future__ import annotations

import errno
import gzip
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from hone.analyze import CLASSES, class_of, fit, load_runs
from hone.analyze.dataset import BUILTIN_DATA, CLASS_PROFILES, csv_files
from hone.analyze.features import ROW_FEATURES, row_features, windows
from hone.collect import ATUNE_METRICS

DATASET = Path(__file__).resolve().parents[3] / "shared" / "atune-corpus" / "dataset"


def hone_runs():
    return [r for p in csv_files([BUILTIN_DATA]) for r in load_runs(p, 1.0)]


def test_every_atune_file_is_one_run_of_a_known_class() -> None:
    files = csv_files([DATASET])
    assert len(files) >= 27
    classes = Counter()
    for path in files:
        runs = load_runs(path, 5.0)
        assert len(runs) == 1, path.name  # one label per file: a file is one run
        assert runs[0].cls in (*CLASSES, *CLASS_PROFILES), (path.name, runs[0].app)
        assert runs[0].values.shape[1] == len(ATUNE_METRICS)
        classes[runs[0].cls] += 1
    assert classes["web"] == 6 and classes["database"] >= 5 and classes["compute"] >= 7


def test_labels_map_to_classes() -> None:
    assert class_of("throughput_performance", "redis") == "in-memory-database"
    assert class_of("default", "nginx_https_short") == "web"
    assert class_of("default", "encryption_AES") == "compute"
    assert class_of("storage", "fio") == "storage"  # hone's files carry the class
    assert class_of("batch", "myapp") == "batch"  # a custom class keeps its name
    assert class_of("default", "myapp") == "myapp"  # A-Tune's tuned-style type: the app


def test_features_are_scale_free() -> None:
    """Ten times the traffic, interrupts and context switches (a bigger machine under the same
    kind of load) leave every feature alone: rates enter only as ratios."""
    values = load_runs(BUILTIN_DATA / "web--nginx-1.csv.gz", 1.0)[0].values[:5]
    scaled = values.copy()
    for name in ("NET.STAT.rxkBs", "NET.STAT.txkBs", "NET.STAT.rxpcks", "NET.STAT.txpcks",
                 "MEM.VMSTAT.system.in", "SYS.TASKS.cswchs"):  # fmt: skip
        scaled[:, ATUNE_METRICS.index(name)] *= 10
    a, b = row_features(values), row_features(scaled)
    assert np.allclose(a, b)
    at = {name: i for i, name in enumerate(ROW_FEATURES)}
    busier = values.copy()
    busier[:, ATUNE_METRICS.index("NET.STAT.txkBs")] *= 10  # a different shape does move them
    c = row_features(busier)
    assert not np.allclose(c[:, at["net tx share"]], a[:, at["net tx share"]])


def test_unavailable_metrics_do_not_break_features() -> None:
    values = np.full((20, len(ATUNE_METRICS)), np.nan)
    x = windows(values, 1.0)
    assert x.shape[0] >= 1 and np.isfinite(x).all()


@pytest.mark.parametrize("held", ["storage--fio-2", "web--nginx-1", "in-memory-database--redis-2",
                                  "database--postgresql-1", "compute--sysbench-cpu-1"])  # fmt: skip
def test_a_run_held_out_is_named_right(held: str) -> None:
    """Train on every other run collected here, classify the held-out run's windows."""
    runs = hone_runs()
    test = next(r for r in runs if r.source == f"{held}.csv.gz")
    model = fit([r for r in runs if r is not test])
    x = windows(test.values, test.interval)
    named = np.array(model.classes)[model.probabilities(x).argmax(axis=1)]
    assert np.mean(named == test.cls) >= 0.75, Counter(named)


def test_explain_names_features_that_carry_the_prediction() -> None:
    runs = hone_runs()
    model = fit(runs)
    fio = next(r for r in runs if r.source == "storage--fio-1.csv.gz")
    x = windows(fio.values, fio.interval)[0]
    reasons = model.explain(x, "storage")
    assert reasons and all(drop > 0 for _, drop in reasons)
    assert any("disk" in name for name, _ in reasons[:3]), reasons


@pytest.mark.slow
def test_train_then_analyze_with_the_model(hone_cli, hone_home: Path, tmp_path: Path) -> None:
    result = hone_cli("train", str(BUILTIN_DATA), "--name", "mine", "--profile",
                      "web=hone-web", "--profile", "compute=hone-compute")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert (hone_home / "analyze" / "models" / "mine.pkl").is_file()
    assert "storage" in result.stdout and "hone-web" in result.stdout
    result = hone_cli("analyze", "--model", "mine", "--duration", "1.5", "--interval", "0.5",
                      "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    analysis = json.loads(result.stdout)  # the document of GET /api/analysis (docs/serve.md)
    assert analysis["class"] in {"compute", "database", "in-memory-database", "storage", "web"}
    assert set(analysis["features"][0]) == {"name", "value", "typical"}
    assert analysis["bottleneck"] is None or isinstance(analysis["bottleneck"], str)
    assert all(set(p) == {"name", "pid", "cpu"} for p in analysis["busiest"])
    assert abs(sum(analysis["probabilities"].values()) - 1) < 1e-6
    assert analysis["samples"] == 3
    names = [r["name"].split()[0] for r in analysis["resources"]]
    assert names[:3] == ["CPU", "memory", "disk"] and names[-1] == "network"
    assert set(names[2:-1]) == {"disk"}  # {disk}, then any other disk that did I/O
    assert all(r["verdict"] in ("ok", "busy", "saturated") for r in analysis["resources"])
    assert analysis["profile"] == f"hone-{analysis['class']}"
    assert (analysis["model"], analysis["hardware"]) == ("mine", False)


@pytest.mark.slow
def test_analyze_picks_the_model_this_machine_can_feed(hone_cli) -> None:
    """This VM counts no hardware events: hone's default model, and the output says so; on a
    machine that counts them, the model with hardware counters (trained from A-Tune's runs)."""
    from hone.analyze.analysis import pick_model
    from hone.collect.perf import hardware_counters_available

    assert not hardware_counters_available()
    result = hone_cli("analyze", "--duration", "1", "--interval", "0.5", "--json")
    assert result.returncode == 0, result.stderr
    analysis = json.loads(result.stdout)
    assert (analysis["model"], analysis["hardware"]) == ("default", False)
    result = hone_cli("analyze", "--duration", "1", "--interval", "0.5")
    assert result.returncode == 0, result.stderr
    assert "model: default, without hardware counters (this machine has none)" in result.stdout
    assert pick_model(counts=True).hardware and not pick_model(counts=False).hardware


@pytest.mark.slow
def test_bad_input_gets_one_line(hone_cli, tmp_path: Path) -> None:
    unlabelled = tmp_path / "plain.csv"
    unlabelled.write_text("CPU.STAT.util\n12\n")
    broken = tmp_path / "broken.csv.gz"
    broken.write_bytes(gzip.compress(b"CPU.STAT.util,workload.type,workload.appname\n1,a,b\n")[:30])
    one_class = tmp_path / "one.csv"
    one_class.write_text("CPU.STAT.util,workload.type,workload.appname\n" + "5,a,b\n" * 40)
    damaged = tmp_path / "damaged.csv"  # a cell that is not a number is not a gap in the data
    damaged.write_text("CPU.STAT.util,workload.type,workload.appname\n5,a,b\nabc,a,b\n")
    infinite = tmp_path / "infinite.csv"  # past a float (1e400) or `inf`: no reading at all
    infinite.write_text(
        "CPU.STAT.util,workload.type,workload.appname\n" + "7,c,d\n" * 20 + "1e400,c,d\n"
    )
    bad_model = tmp_path / "model.pkl"
    bad_model.write_bytes(b"not a pickle")
    cases = [
        (("train", str(tmp_path / "missing.csv")), "no such file"),
        (("train", str(unlabelled)), "no workload.type"),
        (("train", str(broken)), "cannot read CSV"),
        (("train", str(one_class)), "one class only"),
        (("train", str(damaged), str(one_class)), "damaged.csv:3: CPU.STAT.util: 'abc' is not a"),
        (("train", str(infinite), str(one_class)), "infinite.csv:22: CPU.STAT.util: '1e400'"),
        (("train", str(BUILTIN_DATA), "--interval", "0"), "--interval must be above 0"),
        (("train", str(BUILTIN_DATA), "--interval", "-5"), "--interval must be above 0"),
        (("train", str(BUILTIN_DATA), "--profile", "web"), "expected CLASS=PROFILE"),
        (("train", str(BUILTIN_DATA), "--profile", "web=no-such-profile"), "no-such-profile"),
        (("train", str(BUILTIN_DATA), "--profile", "batch=hone-web"), "not in the data"),
        (("analyze", "--model", "nothing"), "no model named"),
        (("analyze", "--model", str(bad_model)), "not a hone model"),
        (("analyze", "--duration", "1"), "at least two intervals"),
        (("analyze", "--apply", "--min-confidence", "50"), "between 0 and 1"),
    ]
    for args, message in cases:
        result = hone_cli(*args)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert message in result.stderr, (args, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.slow
def test_a_hardware_counter_model_needs_counters(hone_cli, tmp_path: Path) -> None:
    """Trained on A-Tune's runs (which have counters); this VM counts none, so analyze refuses."""
    files = [str(DATASET / n) for n in (
        "encryption_AES.csv.gz", "encryption_MD5.csv.gz",
        "web-nginx-http-short-connection-20200721-164642.csv.gz",
    )]  # fmt: skip
    model = tmp_path / "hw.pkl"
    result = hone_cli("train", *files, "--interval", "5", "--hardware", "-o", str(model))
    assert result.returncode == 0, result.stderr
    result = hone_cli("analyze", "--model", str(model), "--duration", "2")
    assert result.returncode == 2
    assert "hardware counters" in result.stderr


def test_apply_refused_keeps_the_analysis_on_stdout(hone_cli, hone_home: Path, tmp_path: Path):
    """`--apply --json` when no profile is applied (below --min-confidence, no profile for the
    class, a failed transaction): the analysis that took its whole duration is still printed,
    with why nothing was applied; the error is the one line on stderr, exit 2."""
    for cls in ("quiet", "busy"):
        result = hone_cli("collect", "-i", "0.2", "-n", "3", "-o", str(tmp_path / f"{cls}.csv"),
                          "--type", cls, "--app", cls)  # fmt: skip
        assert result.returncode == 0, result.stderr
    result = hone_cli("train", str(tmp_path), "--name", "plain", "--interval", "0.2")
    assert result.returncode == 0, result.stderr
    result = hone_cli("analyze", "--model", "plain", "--duration", "1", "--interval", "0.5",
                      "--apply", "--min-confidence", "0", "--json")  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.startswith("hone: no profile is mapped to class"), result.stderr
    assert len(result.stderr.splitlines()) == 1
    analysis = json.loads(result.stdout)
    assert analysis["class"] in ("quiet", "busy") and analysis["samples"] == 2
    assert analysis["applied"] is None and "no profile is mapped" in analysis["not_applied"]
    assert not (hone_home / "profile.active").exists()


LISTEN = """
import json, socket, subprocess
from hone.analyze import use
from hone.collect import Collector

subprocess.run(["ip", "link", "set", "lo", "up"], check=True)

with Collector(processes=False, hardware=False) as collector:
    before = use.counters()
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)  # never accepted: the queue is full after one connection or two
    clients = []
    for _ in range(20):
        client = socket.socket()
        client.setblocking(False)
        client.connect_ex(server.getsockname())
        clients.append(client)
    snapshot = collector.sample(1.5)
    after = use.counters()
network = use.resources([snapshot], before, after)[3]
drops = after["TcpExt.ListenDrops"] - before["TcpExt.ListenDrops"]
print(json.dumps({"text": network.saturation_text, "drops": drops}))
"""


def test_listen_queue_drops_are_counted_once() -> None:
    """A listener that never accepts, 20 connections (in a network namespace of its own, whose
    counters no other test moves): the kernel counts each refusal as an overflow and again as a
    drop, and the USE table added the two, doubling the figure and its share of saturation."""
    ran = subprocess.run(
        ["unshare", "--net", sys.executable, "-c", LISTEN],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")},
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    found = json.loads(ran.stdout)
    drops = found["drops"]
    assert drops > 0 and f"listen drops {drops}," in found["text"], found


@pytest.fixture
def second_disk() -> Iterator[str]:
    """A disk of its own beside the machine's first one: a zram device, added and removed."""
    control = Path("/sys/class/zram-control")
    number = (control / "hot_add").read_text().strip()
    device = f"zram{number}"
    Path(f"/sys/block/{device}/disksize").write_text("64M")
    try:
        yield device
    finally:
        # a killed writer's last direct write, or udev's probe after it, can hold the device
        # a moment longer: the reset says "busy" until they let go
        deadline = time.monotonic() + 20
        while True:
            try:
                Path(f"/sys/block/{device}/reset").write_text("1")
                break
            except OSError as error:
                if error.errno != errno.EBUSY or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        (control / "hot_remove").write_text(number)


def test_a_busy_second_disk_has_its_row(second_disk: str) -> None:
    """Direct writes to a disk that is not `{disk}` (a database's data disk): the USE table
    showed only the first disk, idle, and left the busy one out."""
    from hone.analyze import use
    from hone.collect import Collector

    writes = f"while :; do dd if=/dev/zero of=/dev/{second_disk} bs=4k count=8000 oflag=direct"
    writer = subprocess.Popen(["sh", "-c", f"{writes} status=none; done"], start_new_session=True)
    try:
        with Collector(processes=False, hardware=False) as collector:
            snapshots = list(collector.stream(0.5, count=2))
    finally:
        os.killpg(writer.pid, signal.SIGKILL)
        writer.wait()
    table = use.resources(snapshots, {}, {})
    names = [r.name for r in table]
    assert names[2] == f"disk {snapshots[-1].disk}" and f"disk {second_disk}" in names, names
    row = table[names.index(f"disk {second_disk}")]
    iops = float(row.utilisation_text.split("busy, ")[1].split()[0])
    assert iops > 100 and row.utilisation > 0, row


def test_a_full_disk_under_the_cache_does_not_stop_the_analysis(
    hone_home: Path, small_disk, tmp_path: Path
):
    """The model is cached under ~/.cache; a machine whose disk is full is one to analyse, and
    `hone analyze` ended with "No space left on device" before it sampled anything. The model
    it trains is hone's from its own runs and one of A-Tune's files (HONE_ATUNE_DATASET), not
    the whole corpus, which took 4 s more to read and fit."""
    cache = small_disk("4k", "cache")
    atune = tmp_path / "atune"
    atune.mkdir()
    (atune / "encryption_MD5.csv.gz").symlink_to(DATASET / "encryption_MD5.csv.gz")
    env = {
        "HONE_HOME": str(hone_home),
        "XDG_CACHE_HOME": str(cache),
        "HONE_ATUNE_DATASET": str(atune),
    }
    ran = subprocess.run(
        [sys.executable, "-m", "hone", "analyze", "-d", "1", "-i", "0.5", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
    )
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["samples"] == 2
    assert ran.stderr.startswith("hone: warning: the model is not cached in"), ran.stderr
    assert "No space left on device" in ran.stderr and len(ran.stderr.splitlines()) == 1
