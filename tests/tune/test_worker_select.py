"""Parameter selection (`tuning: {select: ...}`, A-Tune's feature_filter_*) in a study shared by
`hone worker`s on a real PostgreSQL server: the first worker to reach the selection point makes
it and stores it with the study, every worker then searches the same kept knob and holds the
others at the same values."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

from started_hone import start_hone

from hone.storage import StudyStore
from hone.storage.summary import read_trials

BUDGET, SELECT_AT = 14, 6


def machine(root: Path, name: str) -> Path:
    """Three keys of app.conf; only `a` moves the score (best at 7)."""
    folder = root / name
    folder.mkdir()
    (folder / "app.conf").write_text("a 2\nb 2\nc 2\n")
    (folder / "bench.py").write_text(
        textwrap.dedent("""\
        import time
        conf = dict(line.split() for line in open("app.conf"))
        time.sleep(0.2)
        print(f"score: {100 - (int(conf['a']) - 7) ** 2}")
        """)
    )
    knobs = "".join(
        f"  {k}:\n    type: int\n    range: [1, 9]\n"
        f"    config: {{file: app.conf, format: space, key: {k}}}\n"
        for k in "abc"
    )
    (folder / "hone.yaml").write_text(
        "name: narrow\nknobs:\n"
        + knobs
        + textwrap.dedent(f"""\
        benchmark: {{command: python3 bench.py, timeout: 20}}
        metrics:
          score: {{pattern: 'score: (\\S+)', direction: maximize}}
        tuning: {{engine: random, baseline: 1, seed: 4, budget: {BUDGET}, apply: never,
                  select: {{count: 1, trials: {SELECT_AT}}},
                  confirm: {{candidates: 1, rounds: 2}}}}
        """)
    )
    return folder


def test_workers_share_one_selection_of_knobs(postgres_url: str, tmp_path: Path) -> None:
    folders = [machine(tmp_path, name) for name in ("m1", "m2")]
    workers = [
        start_hone(
            *("worker", str(folder), "--storage", postgres_url, "--worker-id", folder.name),
            env={**os.environ, "HONE_HOME": str(folder / "home")},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for folder in folders
    ]
    outputs = []
    for worker in workers:
        out, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err[-800:]
        outputs.append(out)
    for out in outputs:  # each worker searched the kept knob alone from then on
        assert "kept the 1 knobs that matter most: a" in out, out[-1500:]

    store = StudyStore(postgres_url)
    study = store.find("narrow")
    selection = study.attrs["selection"]
    assert selection["knobs"] == ["a"]
    held = selection["held"]
    assert set(held) == {"b", "c"}
    search = sorted(
        (t for t in read_trials(store, study) if t.phase == "search"), key=lambda t: t.number
    )
    assert len(search) == BUDGET and {t.worker for t in search} == {"m1", "m2"}
    holding = [t for t in search if (t.config["b"], t.config["c"]) == (held["b"], held["c"])]
    # every trial started after the selection holds b and c; one of the other worker's may
    # have been running when it was made
    assert len(holding) >= BUDGET - SELECT_AT - 1, [t.config for t in search]
    assert all((t.config["b"], t.config["c"]) == (held["b"], held["c"]) for t in search[-4:])
    assert len({t.config["a"] for t in search[SELECT_AT:]}) > 1  # a is still searched
