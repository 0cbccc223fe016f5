"""A service that crashes under a reading is started again before the next one: the
baseline's knobs may already be set (no restart would follow), and every reading after would
run against nothing. memcached runs as a daemon through start and stop commands."""

from __future__ import annotations

from pathlib import Path

import yaml

from hone.project import load_project
from hone.storage import StudyStore
from hone.tune.console import Reporter
from hone.tune.records import TuneOptions
from hone.tune.runner import Tuner

PIDFILE = '"$HONE_WORKDIR/memcached.pid"'
START = f"memcached -d -P {PIDFILE} -l 127.0.0.1 -p $HONE_PORT -u root -t $(cat threads.txt)"
STOP = f"[ -f {PIDFILE} ] && kill -9 $(cat {PIDFILE}) 2>/dev/null; rm -f {PIDFILE}; sleep 0.1"
STATS = "memcstat --servers=127.0.0.1:$HONE_PORT"
#: The second reading of the run kills the server, as a crash under load would.
BENCHMARK = (
    "n=$(($(cat count.txt) + 1)); echo $n > count.txt; "
    f"if [ $n = 2 ]; then kill -9 $(cat {PIDFILE}); echo crashed; exit 1; fi; "
    f"{STATS} | grep -q pid && echo score: 1"
)


def make_project(folder: Path) -> Path:
    (folder / "threads.txt").write_text("2\n")
    (folder / "count.txt").write_text("0\n")
    project = {
        "name": "crashed-service",
        "workload": {"start": START, "stop": STOP, "ready": STATS, "ready_timeout": 5},
        "knobs": {
            "threads": {
                "type": "int",
                "range": [1, 4],
                "shell": {"get": "cat threads.txt", "set": 'echo "$value" > threads.txt'},
                "restart": True,
            }
        },
        "benchmark": {"command": BENCHMARK, "timeout": 10},
        "metrics": {"score": {"pattern": r"score: (\d+)", "direction": "maximize"}},
        "tuning": {"engine": "random", "budget": 1, "baseline": 3, "apply": "never"},
    }
    path = folder / "hone.yaml"
    path.write_text(yaml.safe_dump(project))
    return path


def test_a_service_that_crashed_in_the_baseline_is_started_again(tmp_path: Path) -> None:
    project = load_project(str(make_project(tmp_path)))
    Tuner(project, Reporter(), TuneOptions(why=False)).run()
    store = StudyStore()
    trials = store.trials(store.find("crashed-service"))
    # (a reading the machine disturbed, or a warm-up, is kept under a phase of its own)
    baseline = [t for t in trials if t.phase in ("baseline", "disturbed", "warmup")]
    # the crash fails its own reading only: the next runs on a server started again
    assert [(t.state, t.error) for t in baseline[:3]] == [
        ("complete", None),
        ("fail", "benchmark exited 1: crashed"),
        ("complete", None),
    ]
