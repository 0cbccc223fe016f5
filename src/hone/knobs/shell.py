"""A-Tune's knob: a `get` command that prints the value and a `set` command with `$value`.

The value reaches the command through an environment variable, quoted for its context (see
hone.shell), never by pasting text into the command."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hone import shell
from hone.errors import ActuationError
from hone.knobs.base import Actuator, register

VALUE_VARIABLE = "HONE_VALUE"
#: A-Tune's projects spell the placeholder both ways (its redis and ceph examples: `${value}`)
PLACEHOLDERS = {"$value": "${" + VALUE_VARIABLE + "}", "${value}": "${" + VALUE_VARIABLE + "}"}


@register
@dataclass
class ShellActuator(Actuator):
    set_command: str
    get_command: str | None = None
    timeout: float = 60.0
    cwd: str | None = None
    #: Extra environment (A-Tune's ITERATION, {disk}/{network} substitutions).
    env: dict[str, str] = field(default_factory=dict)
    kind = "shell"

    @property
    def readable(self) -> bool:
        return bool(self.get_command)

    def get(self) -> str:
        if not self.get_command:
            raise ActuationError("this knob has no get command", key=self.set_command[:60])
        result = shell.run(self.get_command, env=self.env, timeout=self.timeout, cwd=self.cwd)
        if not result.ok:
            why = "timed out" if result.timed_out else f"exit {result.returncode}"
            raise ActuationError(f"get failed ({why}): {result.tail()}", key=self.get_command[:80])
        try:  # stdout's text has U+FFFD for such bytes: recorded as the original, restore
            # would write U+FFFD back over the Latin-1 byte that was there (as a config knob,
            # a value hone cannot give back exactly stops the run before anything changes)
            return result.raw_stdout.decode().strip()
        except UnicodeDecodeError as exc:
            raise ActuationError(
                f"the value it printed holds bytes that are not UTF-8 (byte {exc.start}): "
                "it could not be written back as it was",
                key=self.get_command[:80],
            ) from None

    def check_value(self, value: str) -> None:
        """A value that reaches a nested interpreter (sed's script, `sh -c`, `eval`, ...) is
        parsed there as code: only plain words may go there (docs/project-format.md)."""
        interpreter = shell.nested_interpreter(self.set_command, "$value")
        if interpreter and not shell.SAFE_NESTED_VALUE.fullmatch(str(value)):
            raise ActuationError(
                f"value {value!r} would be read as code by {interpreter} in the set command;"
                " refused (use a config-file knob, or pass $value as a plain argument)",
                key=self.set_command[:80],
            )

    def set(self, value: str) -> None:
        self.check_value(value)
        command = set_script(self.set_command)
        env = {**self.env, VALUE_VARIABLE: str(value)}
        result = shell.run(command, env=env, timeout=self.timeout, cwd=self.cwd, tracked=True)
        if not result.ok:
            why = "timed out" if result.timed_out else f"exit {result.returncode}"
            raise ActuationError(
                f"set {value!r} failed ({why}): {result.tail()}", key=self.set_command[:80]
            )

    def spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"kind": self.kind, "set_command": self.set_command}
        if self.get_command:
            spec["get_command"] = self.get_command
        if self.cwd:
            spec["cwd"] = self.cwd
        if self.env:
            spec["env"] = self.env
        if self.timeout != 60.0:
            spec["timeout"] = self.timeout
        return spec

    def describe(self) -> str:
        """The whole set command on one line (it names the knob in tables and errors)."""
        return f"shell({' '.join(self.set_command.split())})"


def set_script(set_command: str) -> str:
    """The set command with each `$value` or `${value}` turned into the quoted expansion of
    the variable the value travels in: the value itself never enters the command's text."""
    return shell.render(set_command, PLACEHOLDERS)
