"""`hone` run in this process as the entry point runs it: fast enough for every bad input."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import pytest


@dataclass
class Ran:
    code: int
    stdout: str
    stderr: str

    def one_line(self) -> str:
        """The single line a user error must be: exit code 2, no traceback."""
        assert self.code == 2, (self.code, self.stdout, self.stderr)
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "Traceback" not in self.stderr, self.stderr
        return lines[0]


@pytest.fixture
def hone_run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
    from hone.cli.main import run

    def call(*args: str) -> Ran:
        capsys.readouterr()
        monkeypatch.setattr(sys, "argv", ["hone", *args])
        with pytest.raises(SystemExit) as ended:
            run()
        out = capsys.readouterr()
        code = ended.value.code
        return Ran(code if isinstance(code, int) else 0, out.out, out.err)

    return call
