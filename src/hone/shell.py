"""Running user-written shell commands safely.

A-Tune substitutes `$value` and `$out` into command text, so a value with a quote in it can break
or inject shell. hone keeps the same templates but replaces each placeholder with a reference to an
environment variable (or a file, for megabytes of output), quoted for the context it appears in:
the value itself is never parsed by the shell."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shlex
import signal
import subprocess
import time
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hone import children

_NORMAL, _SINGLE, _DOUBLE, _BACKTICK = "normal", "single", "double", "backtick"
_HONE_VARIABLE = re.compile(r"\$\{(HONE_[A-Z_]+)\}|\$(HONE_[A-Z_]+)")


def expand(text: str) -> str:
    """Expand hone's own $HONE_* variables in a path or an argument (no shell involved)."""
    return _HONE_VARIABLE.sub(lambda m: os.environ.get(m.group(1) or m.group(2), ""), text)


def _quoted(expansion: str, context: str) -> str:
    """The expansion written so that it yields exactly one literal string in this context."""
    if context == _SINGLE:
        return "'\"" + expansion + "\"'"
    if context in (_DOUBLE, _HEREDOC):  # a here-document's quotes are text: none around it
        return expansion
    return '"' + expansion + '"'


_HEREDOC = "heredoc"
#: `<<WORD` or `<<-WORD` (not the here-string `<<<`): the delimiter as written.
#: A word with `$` is no delimiter anyone writes, but the shifted operand of `$(( 1 << $value ))`.
_HEREDOC_START = re.compile(r"<<(-?)[ \t]*((?:[^\s;|&<>()'\"\\$]|'[^']*'|\"[^\"]*\"|\\.)+)")


def _heredoc_body(
    template: str, i: int, delimiter: str, tabs: bool, quoted: bool, expansions: Mapping[str, str]
) -> tuple[str, int]:
    """A here-document's lines from `i` up to and with its delimiter line, each placeholder
    expanded bare (quotes there are text, which the file would get: `"ab c"` for `ab c`). In
    a quoted one (`<<'EOF'`) the shell expands nothing: a placeholder there is refused."""
    out: list[str] = []
    ordered = sorted(expansions, key=len, reverse=True)
    while i < len(template):
        end = template.find("\n", i)
        end = len(template) if end < 0 else end + 1
        line = template[i:end]
        i = end
        if (line.lstrip("\t") if tabs else line).rstrip("\n") == delimiter:
            out.append(line)
            break
        if quoted:
            found = next((p for p in ordered if p in line), None)
            if found is not None:
                raise ValueError(
                    f"{found} stands in a quoted here-document (<<'{delimiter}'), where the "
                    f"shell expands nothing: write <<{delimiter} without quotes"
                )
            out.append(line)
            continue
        j = 0
        while j < len(line):
            placeholder = next((p for p in ordered if line.startswith(p, j)), None)
            if placeholder is not None:
                out.append(_quoted(expansions[placeholder], _HEREDOC))
                j += len(placeholder)
            elif line[j] == "\\":
                out.append(line[j : j + 2])
                j += 2
            else:
                out.append(line[j])
                j += 1
    return "".join(out), i


def render(template: str, expansions: Mapping[str, str]) -> str:
    """Replace each placeholder (e.g. `$value`) by its shell expansion (e.g. `${HONE_VALUE}`),
    quoted for the quoting context at that position of the template."""
    out: list[str] = []
    stack: list[str] = [_NORMAL]
    i, n = 0, len(template)
    ordered = sorted(expansions, key=len, reverse=True)
    pending: list[tuple[str, bool, bool]] = []  # here-documents whose body starts next line
    while i < n:
        context = stack[-1]
        placeholder = next((p for p in ordered if template.startswith(p, i)), None)
        if placeholder is not None:
            out.append(_quoted(expansions[placeholder], context))
            i += len(placeholder)
            continue
        ch = template[i]
        if context in (_NORMAL, _BACKTICK) and template.startswith("<<", i):
            start = _HEREDOC_START.match(template, i)
            if start is not None and not template.startswith("<<<", i):
                word = start.group(2)
                quoted = any(c in word for c in "'\"\\")
                delimiter = re.sub(r"\\(.)|['\"]", lambda m: m.group(1) or "", word)
                pending.append((delimiter, bool(start.group(1)), quoted))
                out.append(start.group(0))
                i = start.end()
                continue
        out.append(ch)
        i += 1
        if ch == "\n" and pending and context in (_NORMAL, _BACKTICK):
            for delimiter, tabs, quoted in pending:
                body, i = _heredoc_body(template, i, delimiter, tabs, quoted, expansions)
                out.append(body)
            pending.clear()
            continue
        if context == _SINGLE:
            if ch == "'":
                stack.pop()
        elif ch == "\\" and context != _SINGLE and i < n:
            out.append(template[i])
            i += 1
        elif context == _DOUBLE and ch == '"':
            stack.pop()
        elif ch == "$" and i < n and template[i] == "(":
            out.append("(")
            i += 1
            stack.append(_NORMAL)
        elif ch == "`":
            if context == _BACKTICK:
                stack.pop()
            else:
                stack.append(_BACKTICK)
        elif context in (_NORMAL, _BACKTICK):
            if ch == "'":
                stack.append(_SINGLE)
            elif ch == '"':
                stack.append(_DOUBLE)
            elif ch == ")" and len(stack) > 1 and context == _NORMAL:
                stack.pop()
    return "".join(out)


#: Programs that run a second interpreter over an argument: text placed there is code again.
_SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "busybox"}
_SCRIPTED = {"python", "python3", "perl", "ruby", "php", "node", "lua", "tclsh"}
_SCRIPT_FLAGS = {"-c", "-e", "-E", "-r"}
_PREFIXES = {"sudo", "env", "nice", "ionice", "command", "exec", "nohup", "stdbuf", "timeout"}
_KEYWORDS = {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "(", ")"}
#: Named as the interpreter when the placeholder stands in an arithmetic expression.
ARITHMETIC = "bash arithmetic"
#: What opens a construct in a command line, and what closes it.
_OPENERS = {
    "$((": "))",
    "$[": "]",
    "((": "))",
    "$(": ")",
    "${": "}",
    "[[": "]]",
    "(": ")",
    "`": "`",
}
#: Constructs whose whole text bash evaluates as arithmetic.
_EVALUATED = ("$((", "$[", "((")
_DECLARE = {"declare", "typeset", "local", "export", "readonly"}
#: What a value may hold when it reaches a nested interpreter: no quoting, delimiter, command,
#: substitution or comment character of sh, sed, awk or any scripting language.
SAFE_NESTED_VALUE = re.compile(r"[A-Za-z0-9 _.,:+=@%-]*")


@functools.lru_cache(maxsize=4096)
def nested_interpreter(template: str, placeholder: str) -> str | None:
    """The interpreter that would read `placeholder` as part of its own program text (sed's
    script, `sh -c`, `eval`, awk's program, `python -c`, ...), or None when the placeholder is
    only ever an argument. hone quotes placeholders for the outer shell; a nested interpreter
    parses the value again, which no quoting of the outer shell can prevent. Kept per (template,
    placeholder): a knob's set command is asked once for each value it declares (thousands for
    a wide range), and each answer lexes the whole command."""
    braced = "${" + placeholder.lstrip("$") + "}"
    marked = template.replace(braced, "\x00").replace(placeholder, "\x00")
    if "\x00" not in marked:
        return None
    if _in_arithmetic(marked):
        return ARITHMETIC
    lexer = shlex.shlex(marked, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: cannot tell, assume the worst
        return "an unparsable command"
    command: list[str] = []
    for token in [*tokens, ";"]:
        if token and set(token) <= set(";|&()"):
            found = _nested_in(command)
            if found:
                return found
            command = []
        else:
            command.append(token)
    return _fed_to_interpreter(marked)


def _fed_to_interpreter(marked: str) -> str | None:
    """The interpreter that reads the marked placeholder as its program on standard input:
    through a pipe (`echo $value | sh`) or in the here-document it is given (`sh <<EOF`,
    `python3 - <<EOF`), where the value is expanded into the program text it then runs."""
    for start in _HEREDOC_START.finditer(marked):
        head = re.split(r"[;&|(\n]", marked[: start.start()])[-1].split()
        line_end = marked.find("\n", start.end())
        delimiter = re.sub(r"['\"\\]", "", start.group(2))
        body_end = marked.find("\n" + delimiter, line_end) if line_end >= 0 else -1
        body = marked[line_end : body_end if body_end >= 0 else len(marked)]
        if "\x00" not in body:
            continue
        # the command the document is given to, and those its output is piped into
        rest = marked[start.end() : line_end if line_end >= 0 else len(marked)]
        for words in [head, *(part.split() for part in re.split(r"\|(?!\|)", rest)[1:])]:
            program = _stdin_program(words)
            if program:
                return program
    lexer = shlex.shlex(marked.replace("\n", " ;\n"), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return None  # nested_interpreter has said so already
    segments: list[list[str]] = [[]]
    for token in [*tokens, ";"]:
        if token == "|":
            segments.append([])
        elif token and set(token) <= set(";|&()"):  # the pipeline ends
            marked_at = next((i for i, s in enumerate(segments) if "\x00" in "".join(s)), None)
            if marked_at is not None:
                for later in segments[marked_at + 1 :]:
                    program = _stdin_program(later)
                    if program:
                        return program
            segments = [[]]
        else:
            segments[-1].append(token)
    return None


def _program(words: list[str]) -> tuple[str, str, list[str]] | None:
    """The program a simple command runs, past its variable assignments and prefixes (`env`,
    `sudo`, ...): its name, the name without a version (`python3.11`: `python`), its arguments."""
    while words and (("=" in words[0] and not words[0].startswith("=")) or words[0] in _PREFIXES):
        words = words[1:]
    if not words:
        return None
    program = os.path.basename(words[0])
    return program, re.sub(r"[\d.]+$", "", program), words[1:]


def _stdin_program(words: list[str]) -> str | None:
    """The interpreter a simple command runs on its standard input (`sh`, `bash -s`,
    `python3 -`, `perl`), else None (`sh script.sh`, `sh -c '...'`, `cat`)."""
    kept: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif (word and set(word) <= set("<>&")) or re.fullmatch(r"\d*[<>]+&?\d*", word or "x"):
            skip = not re.fullmatch(r".*&\d+", word)
        elif word not in _KEYWORDS:
            kept.append(word)
    found = _program(kept)
    if found is None:
        return None
    program, base, args = found
    if program not in _SHELLS and base not in _SCRIPTED:
        return None
    if set(args) & (_SCRIPT_FLAGS | {"-c"}):
        return None  # a program given in its arguments: nested_interpreter looks at those
    # (a file descriptor's number before a redirection is a word of its own here: `2>&1`)
    operands = [a for a in args if (not a.startswith("-") or a == "-") and not a.isdigit()]
    return program if "-s" in args or not operands or operands[0] == "-" else None


def _nested_in(words: list[str]) -> str | None:
    """The interpreter of one simple command whose program text holds the marked placeholder."""
    found = _program([w for w in words if w not in _KEYWORDS])
    if found is None:
        return None
    program, base, args = found
    if program == "eval":
        scripts = args
    elif program == "let" or (program in _DECLARE and any(_integer_flag(a) for a in args)):
        return ARITHMETIC if any("\x00" in arg for arg in args) else None
    elif program in _SHELLS or base in _SCRIPTED:
        flags = {"-c"} if program in _SHELLS else _SCRIPT_FLAGS
        scripts = [args[i + 1] for i, a in enumerate(args[:-1]) if a in flags]
    elif program in ("sed", "gsed", "awk", "gawk", "mawk", "nawk"):
        scripts = _program_text(args, "-e" if "sed" in program else "-v")
    else:
        return None
    return program if any("\x00" in script for script in scripts) else None


def _integer_flag(arg: str) -> bool:
    """`-i` among `declare`'s options: its assignments are evaluated as arithmetic."""
    return arg.startswith("-") and "i" in arg and "=" not in arg


def _in_arithmetic(marked: str) -> bool:
    """Whether the marked placeholder stands where bash (/bin/sh on RHEL, Fedora, openEuler)
    evaluates an arithmetic expression, in which an array subscript such as `a[$(id)]` runs
    its command substitution however the value was quoted: `$((...))`, `$[...]`, `((...))`,
    `[[ ... -eq ... ]]`, and a subscript or substring offset in `${name[...]}`, `${name:...}`.
    A command substitution inside one of them (`$(( $(echo $out | wc -l) + 1 ))`) is a command
    again, where the placeholder is an argument."""
    stack: list[tuple[str, int]] = []  # (what opened it, where)
    i, n = 0, len(marked)
    while i < n:
        char, top = marked[i], stack[-1][0] if stack else ""
        if char == "\\":
            i += 2
        elif char == "\x00" and _arithmetic_here(marked, stack, i):
            return True
        elif char == "'" and top not in _EVALUATED:  # a quoted word: nothing expands in it
            end = marked.find("'", i + 1)
            i = n if end < 0 else end + 1
        elif top and marked.startswith(_OPENERS[top], i):
            stack.pop()
            i += len(_OPENERS[top])
        elif opener := next((o for o in _OPENERS if marked.startswith(o, i)), None):
            stack.append((opener, i))
            i += len(opener)
        else:
            i += 1
    return False


def _arithmetic_here(marked: str, stack: list[tuple[str, int]], at: int) -> bool:
    """Whether the innermost construct around `at` that decides evaluates it as arithmetic."""
    for opener, start in reversed(stack):
        if opener == "(":
            continue  # a parenthesised part of whatever is around it
        if opener in _EVALUATED:
            return True
        if opener == "[[":
            end = marked.find("]]", at)
            return bool(
                re.search(r"\s-(eq|ne|lt|le|gt|ge)\s", marked[start : end if end > 0 else None])
            )
        if opener == "${":
            # after the name: `[` opens a subscript, `:` an offset (`:-` `:=` `:+` `:?` do not)
            return bool(re.match(r"\$\{#?\w+(\[|:(?![-=+?]))", marked[start:at]))
        return False  # `$(` or a backtick: a command of its own
    return False


def _program_text(args: list[str], flag: str) -> list[str]:
    """sed's scripts (`-e S`, else the first operand) or awk's program (the first operand;
    `-v name=value` assignments are data)."""
    if flag == "-e" and "-e" in args:
        return [args[i + 1] for i, a in enumerate(args[:-1]) if a == "-e"]
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("-f", "-v", "-F", "--file"):
            if arg == "-f" or arg == "--file":
                return []  # the program is in a file: the placeholder is not in it
            skip = True
        elif not arg.startswith("-"):
            return [arg]
    return []


@dataclass(frozen=True)
class Result:
    """What a finished command did."""

    command: str
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    #: stdout's bytes: `stdout` has U+FFFD for those that are not UTF-8, which a value read
    #: by a get command (a Latin-1 file) must not be taken for.
    raw_stdout: bytes = field(default=b"", repr=False)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def tail(self, lines: int = 3) -> str:
        """The last lines of stderr (else stdout), for a one-line error message: without the
        colour codes of a tool that colours its errors (they reached `hone show | cat` and the
        terminal that showed the reason), other control characters as their escapes."""
        text = _ANSI.sub("", self.stderr.strip() or self.stdout.strip()).splitlines()
        shown = " | ".join(text[-lines:])[:400]
        return "".join(
            c.encode("unicode_escape").decode("ascii")
            if c != "\t" and unicodedata.category(c) == "Cc"
            else c
            for c in shown
        )


#: A terminal's control sequence: CSI (colours, cursor moves) and OSC (titles, links).
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def _gated(argv: list[str]) -> list[str]:
    """`argv` started only once a line comes through its standard input, a pipe from hone (the
    command itself reads /dev/null). A tracked command is recorded after it starts (its pid
    names the record); were hone killed in between, the command would go on unrecorded and
    could write its value after `restore`. Gated, it exits instead: the pipe's other end is
    hone's alone and closes with it."""
    return ["/bin/sh", "-c", 'read -r _ && exec "$@" </dev/null', "hone-gate", *argv]


def _open(gate: tuple[int, int]) -> None:
    """Let the gated command start (it may have been killed already: nothing reads then)."""
    os.close(gate[0])
    with contextlib.suppress(BrokenPipeError):
        os.write(gate[1], b"go\n")
    os.close(gate[1])


def start_tracked(
    argv: list[str], command: str, grace: float = 0.0, **options: Any
) -> tuple[subprocess.Popen[bytes], Path | None]:
    """Start `argv` in a session of its own behind the gate, record it (`children.add` with
    `command` and `grace`), then open the gate: a hone killed before the record is written
    takes the gate's pipe with it, and the program never runs unrecorded. `options` go to
    Popen (not stdin: the gate reads it; the program gets /dev/null). A missing program is no
    OSError here but the gate's exit 127 (126: not executable) once it opens: a caller that
    names the reason checks the program first."""
    gate = os.pipe()
    try:
        proc = subprocess.Popen(_gated(argv), stdin=gate[0], start_new_session=True, **options)
        record = children.add(proc.pid, command, grace)
    except BaseException:
        for fd in gate:
            os.close(fd)  # a started gate reads end-of-file and exits without running argv
        raise
    _open(gate)
    return proc, record


def run(
    command: str,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    cwd: str | os.PathLike[str] | None = None,
    tracked: bool = False,
) -> Result:
    """Run `sh -c command` in its own process group; on timeout the whole group is killed.
    `tracked`: a command that changes the system (a knob's set) is recorded while it runs, so
    that after a kill of hone `restore` can stop it before putting values back."""
    return run_argv(["/bin/sh", "-c", command], env=env, timeout=timeout, cwd=cwd, tracked=tracked)


def run_argv(
    argv: list[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    cwd: str | os.PathLike[str] | None = None,
    tracked: bool = False,
    pass_fds: tuple[int, ...] = (),
) -> Result:
    """`run` for a program and its arguments (no shell parses them); `pass_fds`: file
    descriptors it inherits."""
    started = time.monotonic()
    options: dict[str, Any] = {
        "stdout": subprocess.PIPE,
        "stderr": subprocess.PIPE,
        "env": {**os.environ, **(env or {})},
        "cwd": cwd,
        "pass_fds": pass_fds,
    }
    if tracked:
        proc, record = start_tracked(argv, " ".join(argv), **options)
    else:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True, **options)
        record = None
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc.pid)
        out, err = proc.communicate()
    except BaseException:
        _kill_group(proc.pid)
        proc.wait()
        raise
    finally:
        if record is not None:
            record.unlink(missing_ok=True)
    return Result(
        argv[2] if argv[:2] == ["/bin/sh", "-c"] else shlex.join(argv),
        proc.returncode,
        out.decode(errors="replace"),
        err.decode(errors="replace"),
        time.monotonic() - started,
        timed_out,
        out,
    )


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def command_line(argv: list[str]) -> str:
    """A command as one line a shell would run: `python3 -c 'import x\ny'` printed raw split
    the line it heads (diagnose's first line) in two; such an argument is written $'...'."""
    return " ".join(_word(arg) for arg in argv)


def _word(arg: str) -> str:
    if not any(ord(c) < 32 or ord(c) == 127 for c in arg):
        return shlex.quote(arg)
    escaped = arg.encode("unicode_escape").decode("ascii").replace("'", "\\'")
    return f"$'{escaped}'"
