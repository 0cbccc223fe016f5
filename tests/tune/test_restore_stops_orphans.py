"""What a killed run left running (a knob's set command, recorded under $HONE_HOME/running/)
is stopped before the originals go back, and said: `hone restore --json` lists it under
`stopped` (it used to be only in the text output), the text shows it on one line (a set
command with a line break in it printed as two lines), and the web UI's Restore stops it too
(it used to put the originals back with the command still running, free to write its trial
value after the restore had answered)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fastapi.testclient import TestClient

from hone.serve.app import create_app
from hone.serve.config import ServeConfig
from hone.storage import StudyStore

#: A set command written over two lines, as `printf '%s\n'` in a YAML double-quoted string is.
COMMAND = "sleep 30; printf '%s\n' 7 > /dev/null"
SHOWN = "/bin/sh -c sleep 30; printf '%s\\n' 7 > /dev/null"


def killed_mid_set(home: Path) -> int:
    """A hone killed while a set command runs: the command goes on in a process group of its
    own, recorded with an owner that is gone. Returns the command's pid."""
    code = (
        "import os, subprocess, sys\n"
        "from hone import shell\n"
        "argv = ['/bin/sh', '-c', sys.argv[1]]\n"
        "quiet = {'stdout': subprocess.DEVNULL, 'stderr': subprocess.DEVNULL}\n"
        "proc, _ = shell.start_tracked(argv, ' '.join(argv), **quiet)\n"
        "print(proc.pid, flush=True)\n"
        "os._exit(0)\n"
    )
    env = {**os.environ, "HONE_HOME": str(home)}
    done = subprocess.run([sys.executable, "-c", code, COMMAND], env=env, capture_output=True,
                          text=True, check=True, timeout=30)  # fmt: skip
    pid = int(done.stdout)
    assert running(pid)
    return pid


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_restore_names_what_it_stopped_in_json_and_on_one_line(hone_home: Path, hone_cli) -> None:
    pid = killed_mid_set(hone_home)
    result = hone_cli("restore", "orphaned", "--json")
    assert result.returncode == 0, result.stderr
    stopped = ["/bin/sh -c " + COMMAND]
    assert json.loads(result.stdout) == {"project": "orphaned", "stopped": stopped, "knobs": []}
    assert not running(pid)

    pid = killed_mid_set(hone_home)
    result = hone_cli("restore", "orphaned")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == f"stopped, left by a killed run: {SHOWN}"
    assert not running(pid)


def test_the_web_restore_stops_what_a_killed_run_left(hone_home: Path) -> None:
    db = StudyStore(f"sqlite:///{hone_home}/studies.db")
    db.update(db.create("orphaned", {}), state="interrupted")
    pid = killed_mid_set(hone_home)
    config = ServeConfig(token="t" * 32, projects={}, storage=db.url)
    with TestClient(create_app(config), base_url="http://127.0.0.1") as client:
        response = client.post(
            "/api/projects/orphaned/restore", headers={"Authorization": "Bearer " + "t" * 32}
        )
    assert response.status_code == 200, response.text
    assert response.json()["stopped"] == ["/bin/sh -c " + COMMAND]
    assert not running(pid)
