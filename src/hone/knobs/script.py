"""A helper script pair, as A-Tune's `[script]` section uses them: `NAME/get.sh` prints the
current value and `NAME/set.sh VALUE...` sets it (the value's words are its arguments, never
shell text). Folders are searched in HONE_SCRIPT_PATH (colon-separated), then hone's state
folder `scripts/`, so A-Tune's own scripts folder can be used as it is."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hone import shell
from hone.errors import ActuationError
from hone.knobs.base import Actuator, register


def script_folders() -> list[Path]:
    from hone.paths import state_dir

    folders = [Path(p) for p in os.environ.get("HONE_SCRIPT_PATH", "").split(":") if p]
    return [*folders, state_dir() / "scripts"]


def find_script(name: str) -> Path | None:
    """The folder holding NAME/get.sh and NAME/set.sh, if any."""
    if not name or "/" in name or name.startswith("."):
        return None
    for folder in script_folders():
        candidate = folder / name
        if (candidate / "get.sh").is_file() and (candidate / "set.sh").is_file():
            return candidate
    return None


@register
@dataclass
class ScriptActuator(Actuator):
    name: str
    timeout: float = 120.0
    kind = "script"

    def setting(self) -> str:
        return f"script:{self.name}"

    def _folder(self) -> Path:
        folder = find_script(self.name)
        if folder is None:
            raise ActuationError(
                "no helper script NAME/get.sh and NAME/set.sh in HONE_SCRIPT_PATH or "
                "the state folder's scripts/",
                key=self.name,
            )
        return folder

    def _run(self, script: str, *args: str) -> str:
        path = self._folder() / script
        result = shell.run_argv(
            ["/bin/sh", str(path), *args], timeout=self.timeout, tracked=script == "set.sh"
        )
        if result.timed_out:
            raise ActuationError(f"{script} took over {self.timeout:g} s", key=self.name)
        if result.returncode != 0:
            reason = " ".join(result.stderr.split())[:300] or f"exit {result.returncode}"
            raise ActuationError(f"{script} failed: {reason}", key=self.name)
        try:  # `stdout` has U+FFFD for what is not UTF-8: not a value to write back
            return result.raw_stdout.decode()
        except UnicodeDecodeError as exc:
            raise ActuationError(
                f"{script} printed bytes that are not UTF-8 (byte {exc.start}): its value "
                "could not be written back as it was",
                key=self.name,
            ) from None

    def get(self) -> str:
        return self._run("get.sh").strip()

    def set(self, value: str) -> None:
        for command in str(value).split("|"):
            self._run("set.sh", *command.split())

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name}
