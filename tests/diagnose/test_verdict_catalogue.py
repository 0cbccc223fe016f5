"""The bottleneck -> knob catalogue: complete, consistent with A-Tune's catalogue (its facts), and
resolved against this machine."""

from __future__ import annotations

from pathlib import Path

import yaml

from hone.diagnose import catalogue

#: shared/ beside the checkout (CI), or beside the folder of worktrees
ATUNE = next(
    p / "shared" / "atune-corpus" / "catalogue"
    for p in Path(__file__).resolve().parents
    if (p / "shared" / "atune-corpus").is_dir()
)


def atune_knobs() -> dict[str, dict]:
    data = yaml.safe_load((ATUNE / "tuning_params_all.yaml").read_text())
    return {item["name"]: item["info"] for item in data["object"]}


def test_every_kind_names_known_knobs_and_advice() -> None:
    data = catalogue.load()
    kinds = ("cpu", "runqueue", "lock", "io", "memory", "frontend", "speculation", "idle", "heap",
             "gc", "go-gc", "softirq", "kernel-network", "kernel-unix", "kernel-files",
             "kernel-memory", "kernel-interrupts", "kernel-switch", "kernel-other")  # fmt: skip
    for kind in kinds:
        entry = data["kinds"][kind]
        assert entry["title"] and entry["advice"]
        assert all(name in data["knobs"] for name in entry["knobs"])


def test_knob_facts_agree_with_atune() -> None:
    theirs = atune_knobs()
    for name, entry in catalogue.load()["knobs"].items():
        if entry.get("source") == "hone":
            assert name not in theirs, name  # hone's own: A-Tune has no such knob
            continue
        info = theirs[name]  # every other knob is one of A-Tune's
        knob = entry["knob"]
        if knob["type"] == "categorical":
            assert set(knob["values"]) <= set(info["options"]), name
        elif knob["type"] == "int":
            low, high = info["scope"]
            assert low <= knob["range"][0] < knob["range"][1] <= high, name
        else:  # ordinal
            low, high = info["scope"]
            assert all(low <= v <= high for v in knob["values"]), name


def test_resolution_on_this_machine() -> None:
    found = catalogue.knobs_for(["io", "cpu", "runqueue"])
    names = [s.name for s in found]
    assert len(names) == len(set(names))
    assert names[:4] == catalogue.load()["kinds"]["io"]["knobs"][:4]  # most important kind first
    for s in found:
        path = (
            Path("/proc/sys") / s.knob["sysctl"].replace(".", "/")
            if "sysctl" in s.knob
            else (Path(s.knob["sysfs"]))
        )
        assert s.present == path.exists(), s.name
        assert "{disk}" not in str(path)
        if not s.present:
            assert "does not exist" in s.reason
