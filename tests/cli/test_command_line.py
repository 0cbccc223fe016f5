"""A diagnosed command is named on one line: `python3 -c 'import time\nwhile ...'` written
raw split `hone diagnose`'s first line (and the report's title) over several."""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from pathlib import Path

from hone.shell import command_line


def test_a_command_with_a_newline_is_one_line_a_shell_runs() -> None:
    argv = ["python3", "-c", "import time\nprint('it''s')", "a b"]
    line = command_line(argv)
    assert line == "python3 -c $'import time\\nprint(\\'it\\'\\'s\\')' 'a b'"
    assert command_line(["nginx", "-g", "daemon off;"]) == shlex.join(
        ["nginx", "-g", "daemon off;"]
    )


def test_a_running_process_is_described_on_one_line() -> None:
    from hone.diagnose.cli import _describe

    child = subprocess.Popen([sys.executable, "-c", "import time\ntime.sleep(30)"])
    cmdline = Path(f"/proc/{child.pid}/cmdline")
    try:
        while b"sleep" not in cmdline.read_bytes():  # until the child has exec'd Python
            time.sleep(0.01)
        described = _describe(child.pid)
    finally:
        child.kill()
        child.wait()
    assert "\n" not in described and "$'import time\\ntime.sleep(30)'" in described


def test_a_kernel_thread_and_a_process_title_are_described_as_ps_shows_them() -> None:
    from hone.diagnose.cli import _describe

    assert _describe(2) == "pid 2 ([kthreadd])"  # no command line: its name in brackets
    # nginx, PostgreSQL and redis write a title over their argv: one string, spaces and all
    title = subprocess.Popen(["perl", "-e", '$0 = "worker: busy /srv/app.conf"; sleep 30'])
    cmdline = Path(f"/proc/{title.pid}/cmdline")
    try:
        while not cmdline.read_bytes().startswith(b"worker"):  # perl's own argv has it too
            time.sleep(0.01)
        described = _describe(title.pid)
    finally:
        title.kill()
        title.wait()
    assert described == f"pid {title.pid} (worker: busy /srv/app.conf)"
