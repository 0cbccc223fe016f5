"""Start points for a new project: `hone new` turns a static profile into a project whose knobs
take their ranges from the catalogues and whose first trial is the profile's values; the
project format's `tuning.start`, and the optimiser wrapper that measures it first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from hone.errors import HoneError
from hone.optimizers import make_optimizer, start_first
from hone.project import load_project
from hone.space import IntRange, SearchSpace

SHARED = next(
    p / "shared" / "atune-corpus"
    for p in Path(__file__).resolve().parents
    if (p / "shared" / "atune-corpus").is_dir()
)
NETWORK_ONLY = """[main]
[sysctl]
net.core.somaxconn = 1024
net.ipv4.tcp_fin_timeout = 20
net.ipv4.tcp_max_syn_backlog = 2048
[ulimit]
{user}.soft.nofile = 102400
"""


def test_a_workload_gets_its_profile_as_a_checked_project(hone_cli, tmp_path: Path) -> None:
    done = hone_cli("new", str(tmp_path / "mc"), "--workload", "memcached", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["profile"] == "hone-in-memory-database"
    assert any("[ulimit]" in line for line in report["left_out"])
    text = (tmp_path / "mc" / "hone.yaml").read_text()
    assert "TODO" in text and "# Where each range comes from:" in text
    project = load_project(tmp_path / "mc" / "hone.yaml")
    start = project.tuning.start[0]
    assert start["vm.swappiness"] == 1 and start["transparent_hugepage.enabled"] == "never"
    assert start["net.core.somaxconn"] == 65535
    for knob in project.knobs:  # every range holds the profile's value
        assert knob.domain.contains(start[knob.name]), knob.name
    assert hone_cli("check", str(tmp_path / "mc")).returncode == 0
    again = hone_cli("new", str(tmp_path / "mc"), "--workload", "memcached")
    assert again.returncode == 2 and "already exists" in again.stderr
    bad = hone_cli("new", str(tmp_path / "x"), "--workload", "nosuchapp")
    assert bad.returncode == 2 and "unknown workload 'nosuchapp'" in bad.stderr


def test_every_class_analyze_names_is_a_workload_for_new(hone_cli, tmp_path: Path) -> None:
    """`hone analyze` said `workload: messaging` (profile hone-storage), and `hone new
    --workload messaging` answered unknown workload."""
    from hone.analyze.dataset import CLASS_PROFILES, CLASSES
    from hone.profiles.start import profile_for

    assert {cls: profile_for(cls) for cls in CLASS_PROFILES} == CLASS_PROFILES
    assert all(profile_for(cls) == f"hone-{cls}" for cls in CLASSES)
    done = hone_cli("new", str(tmp_path / "kafka"), "--workload", "messaging", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["profile"] == CLASS_PROFILES["messaging"]


def test_the_check_it_suggests_runs_as_printed(hone_cli, tmp_path: Path) -> None:
    """The line `hone new` ends with is a command to paste: a folder with a space in its name
    is quoted there, so the shell hands `hone check` one path."""
    folder = tmp_path / "my project"
    done = hone_cli("new", str(folder), "--workload", "memcached")
    assert done.returncode == 0, done.stderr
    hint = done.stdout.strip().splitlines()[-1]
    assert hint.startswith("check it with: hone check ")
    pasted = hint.removeprefix("check it with: hone ")
    checked = subprocess.run(
        f"{sys.executable} -m hone {pasted}", shell=True, capture_output=True, text=True,
        env={**os.environ, "HONE_HOME": str(tmp_path / "home")},
    )  # fmt: skip
    assert checked.returncode == 0, checked.stderr


def test_atune_profile_takes_ranges_from_atune_catalogue(
    hone_cli, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("HONE_PROFILE_PATH", str(SHARED / "profiles"))
    monkeypatch.setenv("HONE_NETWORK", "lo")
    done = hone_cli(
        "new", str(tmp_path / "ng"), "--from-profile", "web-nginx-http-short-connection",
        "--catalogue", str(SHARED / "catalogue" / "tuning_params_all.yaml"), "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    knobs = {k["name"]: k for k in json.loads(done.stdout)["knobs"]}
    backlog = knobs["net.ipv4.tcp_max_syn_backlog"]
    assert backlog["range_from"] == "A-Tune's knob catalogue" and backlog["start"] == 262144
    low, high = backlog["range"]
    assert low <= 262144 <= high
    left = " ".join(json.loads(done.stdout)["left_out"])
    assert "ip_local_port_range" in left and "several numbers" in left
    assert "[systemctl] irqbalance" in left
    assert hone_cli("check", str(tmp_path / "ng")).returncode == 0


def test_a_file_that_is_no_catalogue_is_refused(hone_cli, tmp_path: Path) -> None:
    """A project file or a profile given as --catalogue was read as an empty catalogue, and the
    project silently took its ranges from elsewhere."""
    wrong = tmp_path / "hone.yaml"
    wrong.write_text("name: x\nknobs: {}\n")
    done = hone_cli(
        "new", str(tmp_path / "ng"), "--workload", "memcached", "--catalogue", str(wrong)
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"hone: {wrong}: not an A-Tune knob catalogue: it has no `object` list of knobs"
        " (A-Tune's is tuning_params_all.yaml)"
    )
    assert not (tmp_path / "ng").exists()


def test_start_points_are_checked_like_every_other_key(hone_cli, tmp_path: Path) -> None:
    base = {
        "name": "p",
        "knobs": {
            "a": {"type": "int", "range": [1, 10], "shell": {"get": "echo 3", "set": "true"}}
        },
        "benchmark": {"command": "echo s: 1"},
        "metrics": {"s": {"pattern": "s: (\\d+)", "direction": "maximize"}},
    }
    path = tmp_path / "hone.yaml"
    for start, message in (
        ([{"b": 3}], "no knob named 'b'"),
        ([{"a": 30}], "30 is not in"),
        ({"a": 3}, "must be a list"),
    ):
        path.write_text(yaml.safe_dump({**base, "tuning": {"start": start}}))
        with pytest.raises(HoneError) as error:
            load_project(path)
        assert message in error.value.message and error.value.line, str(error.value)
    done = hone_cli("check", str(path))  # the last one, as the user sees it
    assert done.returncode == 2 and "hone.yaml:" in done.stderr and "Traceback" not in done.stderr
    path.write_text(yaml.safe_dump({**base, "tuning": {"start": [{"a": 7}]}}))
    assert load_project(path).tuning.start == [{"a": 7}]


def test_the_start_point_is_asked_first_and_once() -> None:
    space = SearchSpace({"a": IntRange(1, 100), "b": IntRange(1, 100)})
    optimizer = start_first(make_optimizer("random", space, seed=1), [{"a": 7, "b": 9}])
    assert optimizer.ask() == {"a": 7, "b": 9}
    optimizer.tell({"a": 7, "b": 9}, 1.0)
    assert optimizer.ask() != {"a": 7, "b": 9}
    assert optimizer.history[0].config == {"a": 7, "b": 9}  # the wrapped optimiser learnt it
    resumed = start_first(make_optimizer("random", space, seed=1), [{"a": 7, "b": 9}])
    resumed.tell({"a": 7, "b": 9}, 1.0)  # measured before the run was resumed
    assert resumed.ask() != {"a": 7, "b": 9}
    batch = start_first(make_optimizer("random", space, seed=1), [{"a": 1, "b": 1}])
    proposals = batch.ask_batch(3)
    assert proposals[0] == {"a": 1, "b": 1} and len(proposals) == 3
    assert start_first(batch.inner, []) is batch.inner
    elsewhere = start_first(make_optimizer("random", space, seed=1), [{"a": 1, "b": 1}])
    assert {"a": 1, "b": 1} not in elsewhere.ask_batch(2, pending=[{"a": 1, "b": 1}])


@pytest.fixture
def namespace() -> Iterator[str]:
    """A fresh network namespace: its net.* sysctls are its own, so a study changes nothing
    the rest of the machine sees."""
    name = f"hn{os.getpid() % 100000}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    yield name
    subprocess.run(["ip", "netns", "del", name], check=False)


def test_a_study_measures_the_profile_first(
    hone_home: Path, tmp_path: Path, namespace: str
) -> None:
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "netstart.conf").write_text(NETWORK_ONLY)
    env = {**os.environ, "HONE_PROFILE_PATH": str(profiles), "HONE_HOME": str(hone_home)}

    def hone(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["ip", "netns", "exec", namespace, sys.executable, "-m", "hone", *args],
            capture_output=True, text=True, env=env, timeout=120,
        )  # fmt: skip

    project = tmp_path / "np"
    done = hone("new", str(project), "--from-profile", "netstart",
                "--benchmark", "echo score: 1", "--metric", "score=score: ([0-9.]+)")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert hone("check", str(project)).returncode == 0
    tuned = hone("tune", str(project), "--budget", "2", "--baseline", "1", "--apply", "never",
                 "--no-why", "--engine", "random")  # fmt: skip
    assert tuned.returncode == 0, tuned.stderr
    shown = json.loads(hone("show", "np", "--json").stdout)
    # a reading the machine disturbed is kept as `disturbed`, the baseline's too (under load)
    search = [t for t in shown["trials"] if t["phase"] == "search"]
    first = {"net.core.somaxconn": 1024, "net.ipv4.tcp_fin_timeout": 20,
             "net.ipv4.tcp_max_syn_backlog": 2048}  # fmt: skip
    assert search[0]["config"] == first
    assert sum(t["config"] == first for t in shown["trials"] if t["phase"] == "search") == 1


def test_an_unlimited_machine_value_still_gives_a_project_that_loads(tmp_path: Path) -> None:
    """kernel.shmall and shmmax are 2^64 - 2^24 by default: twice that is beyond any knob."""
    from hone.profiles import ProfileLibrary
    from hone.profiles.start import draft, write

    profile = ProfileLibrary([SHARED / "profiles"]).load("web-nginx-http-long-connection")
    drafted, _ = draft(profile)
    project = load_project(write(tmp_path, profile, drafted, []))
    shmall = project.knob("kernel.shmall").domain
    assert isinstance(shmall, IntRange) and shmall.contains(4294967296)
