"""What a knob reads and writes on a remote host, as POSIX sh run through one ssh call per batch.

A knob's value lives in a resource: a /proc or /sys file, a text file (config knobs: the file is
read, edited here with the config knob's own code, and replaced atomically there), or a get/set
command pair (script and shell knobs). Several knobs of one file share one read and one write.
Every value and path enters a script through shlex.quote; a script reaches the host on ssh's
standard input and each step runs with stdin from /dev/null, so no step can read the script."""

from __future__ import annotations

import re
import secrets
import shlex
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from hone.cluster.ssh import Host, SshFailed, shell_failed, ssh_failed
from hone.errors import ActuationError
from hone.knobs import Actuator
from hone.knobs.base import equal_values
from hone.knobs.config_file import ConfigFileActuator
from hone.knobs.script import ScriptActuator, find_script
from hone.knobs.shell import VALUE_VARIABLE, ShellActuator, set_script
from hone.knobs.sysctl import SysctlActuator
from hone.knobs.sysfs import SysfsActuator

KINDS = ("sysctl", "sysfs", "config", "script", "shell")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SELECTED = re.compile(r"\[([^\]]+)\]")


@dataclass(frozen=True)
class Resource:
    """One thing read and written on a host; `key` names it so knobs can share it."""

    key: str
    read: str
    #: The sh text that writes a raw value (`{raw}` is replaced by the quoted raw text).
    write: str
    #: True when the raw text is a whole file (replaced atomically), not a value.
    whole_file: bool = False

    def write_step(self, raw: str, expected: str | None = None) -> str:
        """The write; with `expected` (a whole file hone read earlier) only if the file still
        holds exactly that text, so an edit made on the host meanwhile is never overwritten."""
        write = self.write.replace("{raw}", shlex.quote(raw))
        if expected is None:
            return write
        guard = f'[ "$({self.read}; printf x)" = {shlex.quote(expected + "x")} ]'
        changed = "echo 'changed on the host since hone read it' >&2; false"
        return f"{{ {guard} || {{ {changed}; }}; }} && {write}"


@dataclass
class RemoteKnob:
    """A knob's actuator seen through its resource on some host."""

    actuator: Actuator
    resource: Resource
    edits: bool = field(default=False)

    def value(self, raw: str) -> str:
        inner = self.actuator
        if isinstance(inner, ConfigFileActuator):
            return inner.value_in(raw)
        if isinstance(inner, SysfsActuator):
            selected = _SELECTED.search(raw)
            return selected.group(1) if selected else raw.strip()
        return raw.strip()

    def edit(self, raw: str, value: str) -> str:
        """The resource's new raw text with this knob at `value`."""
        if isinstance(self.actuator, ConfigFileActuator):
            return self.actuator.edited(raw, value)
        return value

    def same(self, actual: str, wanted: str) -> bool:
        norm = self.actuator.normalise
        return equal_values(norm(actual), norm(wanted))


def remote_knob(actuator: Actuator) -> RemoteKnob:
    """The remote form of a local actuator; ActuationError for a kind no host can take."""
    q = shlex.quote
    # /proc and /sys are read with `cat`: many sysctls answer only a read at offset 0, so a
    # shell's byte-by-byte `read` would get one digit
    if isinstance(actuator, SysctlActuator):
        relative = actuator.key.replace(".", "/") if "/" not in actuator.key else actuator.key
        path = _clean("/proc/sys", relative, actuator.key)
        return RemoteKnob(actuator, Resource(f"proc:{path}", f"cat {q(path)}", _proc_write(path)))
    if isinstance(actuator, SysfsActuator):
        path = _clean("/sys", actuator.path.removeprefix("/sys/"), actuator.path)
        return RemoteKnob(actuator, Resource(f"sys:{path}", f"cat {q(path)}", _proc_write(path)))
    if isinstance(actuator, ConfigFileActuator):
        path = str(actuator.path)
        read = f"cat {q(path)}"
        return RemoteKnob(actuator, Resource(f"file:{path}", read, _file_write(path), True))
    if isinstance(actuator, ScriptActuator):
        folder = find_script(actuator.name)
        if folder is None:
            raise ActuationError("no helper script NAME/get.sh and NAME/set.sh", key=actuator.name)
        get, put = (folder / "get.sh").read_text(), (folder / "set.sh").read_text()
        read = f"sh -c {q(get)} get.sh"
        write = f'hone_set() {{ sh -c {q(put)} set.sh "$@"; }}; hone_split {{raw}} hone_set'
        return RemoteKnob(actuator, Resource(f"script:{actuator.name}", read, _SPLIT + write))
    if isinstance(actuator, ShellActuator):
        if not actuator.get_command:
            raise ActuationError("a knob on hosts needs a get command", key=actuator.set_command)
        env = " ".join(f"{k}={q(v)}" for k, v in actuator.env.items() if _NAME.fullmatch(k))
        command = set_script(actuator.set_command)
        read = f"env {env} sh -c {q(actuator.get_command)}"
        write = f"env {env} {VALUE_VARIABLE}={{raw}} sh -c {q(command)}"
        key = f"shell:{actuator.set_command}"
        return RemoteKnob(actuator, Resource(key, read, write))
    raise ActuationError(
        f"a {actuator.kind} knob cannot be put on hosts (those can: {', '.join(KINDS)})",
        key=actuator.describe(),
    )


def _clean(root: str, relative: str, key: str) -> str:
    parts = PurePosixPath(relative.lstrip("/")).parts
    if not parts or ".." in parts:
        raise ActuationError(f"{key!r} is not under {root}", key=key)
    return str(PurePosixPath(root, *parts))


def _proc_write(path: str) -> str:
    return f"printf %s {{raw}} > {shlex.quote(path)}"


def _file_write(path: str) -> str:
    """Replace the file atomically: a temporary file beside it made with its owner and mode
    (`cp --attributes-only`), the text written into it, then a rename; a symlink's target is
    what is replaced."""
    return (
        f'f={shlex.quote(path)}; if [ -L "$f" ]; then f=$(readlink -f -- "$f"); fi; '
        '[ -f "$f" ] && t="${f%/*}/.${f##*/}.hone$$" && '
        '{ cp --attributes-only --preserve=mode,ownership -- "$f" "$t" && '
        'printf %s {raw} > "$t" && mv -f -- "$t" "$f" || { rm -f -- "$t"; false; }; }'
    )


#: A-Tune's set.sh takes `a b|c d` as two calls: `set.sh a b` then `set.sh c d`.
_SPLIT = (
    "hone_split() { v=$1; f=$2; while :; do p=${v%%|*}; "
    'set -f; $f $p || return; set +f; [ "$p" = "$v" ] && return 0; v=${v#*|}; done; }; '
)


# -- batches: many steps, one ssh call --------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One snippet's outcome: its standard output, or its error."""

    ok: bool
    text: str


def run_steps(
    host: Host, steps: list[str], *, stop_at_failure: bool, lock: str | None = None
) -> list[Step]:
    """Run the snippets in order in one shell on the host. Each one's output (and, apart, its
    errors) is framed by a random marker; no temporary file, no extra process. With
    stop_at_failure the steps after a failed one are not run (fewer results come back). With
    `lock` the shell runs while that file of the host is locked (Host.run)."""
    mark = "@@hone-" + secrets.token_hex(8)
    lines = []
    for i, step in enumerate(steps):
        lines += [
            f"printf '%s\\n' '{mark}>{i}'; printf '%s\\n' '{mark}>{i}' >&2",
            f"{{ {step}\n}} </dev/null",
            "r=$?",
            f"printf '\\n%s %s\\n' '{mark}<{i}' \"$r\"; printf '\\n%s\\n' '{mark}<{i}' >&2",
        ]
        if stop_at_failure:
            lines.append('[ "$r" = 0 ] || exit 0')
    result = host.run("\n".join(lines) + "\n", lock=lock)
    failed = ssh_failed(result)
    if failed:
        raise SshFailed(failed, key=host.where())
    if result.returncode != 0:
        raise ActuationError(shell_failed(result), key=host.where())
    return _parse(result.stdout, result.stderr, mark, len(steps))


def _parse(output: str, errors: str, mark: str, count: int) -> list[Step]:
    steps = []
    for i in range(count):
        head = output.find(f"{mark}>{i}\n")
        if head < 0:
            break
        start = head + len(f"{mark}>{i}\n")
        tail = re.compile(rf"\n{re.escape(mark)}<{i} (\d+)\n").search(output, start)
        if tail is None:
            raise ActuationError("the host's answer was cut short", key=str(i))
        if tail.group(1) == "0":
            steps.append(Step(True, output[start : tail.start()]))
            continue
        said = _between(errors, f"{mark}>{i}\n", f"\n{mark}<{i}\n")
        steps.append(Step(False, " ".join(said.split())[:300] or f"exit {tail.group(1)}"))
    return steps


def _between(text: str, head: str, tail: str) -> str:
    start = text.find(head)
    if start < 0:
        return ""
    start += len(head)
    end = text.find(tail, start)
    return text[start : end if end >= 0 else None]
