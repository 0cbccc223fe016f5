"""`hone diagnose --system` through a pipe: each busy process's command whole in its row. The
column was cut at 40 characters, so `python /srv/app/bin/worker.py --queue` read
`python /srv/app/bin/worker.py --qu`, a command that cannot be looked for."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SPIN = "import time\nend = time.monotonic() + 60\nwhile time.monotonic() < end:\n    pass\n"


def test_a_long_command_is_printed_whole(tmp_path: Path, hone_cli) -> None:
    script = tmp_path / "a_busy_program_with_a_rather_long_name.py"
    script.write_text(SPIN)
    program = subprocess.Popen([sys.executable, str(script), "--queue=everything"])
    try:
        done = hone_cli("diagnose", "--system", "-d", "2", "-o", str(tmp_path / "rep"))
    finally:
        program.kill()
        program.wait()
    assert done.returncode == 0, done.stderr
    command = f"{Path(sys.executable).name} {script} --queue=everything"
    assert len(command) > 40
    rows = [line for line in done.stdout.splitlines() if re.match(rf"\s+{program.pid} ", line)]
    assert len(rows) == 1 and f" {command} " in rows[0], done.stdout
