"""A launched process's own command line and environment may name hone's variables
(`$HONE_PORT`), which hone fills in; a flag or env knob's value is the knob's and reaches the
process exactly as given, even when it spells `$HONE_PORT` itself."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

RECORDER = """\
import json, os, sys, time
with open(os.path.join(os.environ["HONE_WORKDIR"], "seen"), "a") as out:
    out.write(json.dumps({"argv": sys.argv[1:], "mode": os.environ.get("MODE"),
                          "own": os.environ.get("OWN")}) + "\\n")
open(os.path.join(os.environ["HONE_WORKDIR"], "up"), "w").close()  # ready: this start wrote
time.sleep(600)
"""


def test_a_knob_value_is_not_expanded_the_project_words_are(
    hone_cli, hone_home: Path, tmp_path: Path
) -> None:
    (tmp_path / "recorder.py").write_text(RECORDER)
    (tmp_path / "hone.yaml").write_text(
        textwrap.dedent("""\
        name: launch-values
        workload:
          process:
            command: [python3, recorder.py, --port, "$HONE_PORT"]
            env: {OWN: "at $HONE_PORT"}
            stop_signal: KILL
          ready: rm "$HONE_WORKDIR/up"
        knobs:
          tag:
            type: categorical
            values: ["$HONE_PORT", plain]
            default: plain
            flag: --tag
          mode:
            type: categorical
            values: ["${HONE_WORKDIR}", plain]
            default: plain
            env: MODE
        benchmark:
          command: echo "ops 1"
          warmup: false
        metrics: {ops: {pattern: 'ops ([0-9]+)', direction: maximize}}
        tuning: {engine: gridsearch, budget: 4, baseline: 1, apply: never,
                 confirm: {candidates: 1, rounds: 1}}
        """)
    )
    run = hone_cli("tune", str(tmp_path), "--no-why", "--max-repeats", "2")
    assert run.returncode == 0, run.stderr
    seen = [
        json.loads(line)
        for line in (hone_home / "work" / "launch-values" / "seen").read_text().splitlines()
    ]
    port = seen[0]["argv"][1]
    assert port.isdigit()  # the project's own word, filled in
    assert all(s["own"] == f"at {port}" for s in seen)
    tags = {s["argv"][3] for s in seen if len(s["argv"]) > 3}
    modes = {s["mode"] for s in seen}
    assert "$HONE_PORT" in tags and port not in tags  # the knob's value, as given
    assert "${HONE_WORKDIR}" in modes and str(hone_home / "work" / "launch-values") not in modes
