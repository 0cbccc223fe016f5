"""A key in a configuration file: INI (with sections), `key value` (redis.conf), `key=value`
(postgresql.conf, sysconfig) or a user regex whose one group is the value.

The file is rewritten atomically (temporary file, rename) with its mode and owner kept,
and every other byte (line endings, comments, blank lines, bytes that are not UTF-8) stays as
it was. A key set twice, in the file or in a file it includes, is refused: programs differ in
which one they read, so an edit of either could do nothing. In a MySQL option file `a-b` and
`a_b` are one key, as they are to the server, `loose-a_b` (or `loose_a-b`) sets it too, and a
key set once in a file the option file includes (`!include`, `!includedir`) is found and edited
there, where the server reads it. The key set in another group the server reads ([mariadb] for a
knob on [mysqld], see mysql_groups) is refused too, naming that line, rather than the line read
last edited: which line that is turns on the server's version ([mariadb-10.6] is skipped by
10.11), its make (MySQL reads no [mariadb]) and its command line (`--defaults-group-suffix`),
none of which the file shows, and an edit elsewhere would leave a second value that reads like
the one in use; the same reasons refuse a key set twice in one group."""

from __future__ import annotations

import contextlib
import glob
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hone.errors import ActuationError
from hone.knobs.base import Actuator, register
from hone.knobs.mysql_groups import is_server_group, other_server_groups
from hone.shell import expand

FORMATS = ("ini", "space", "equals", "regex")
#: Lines that read another file in: redis and nginx `include`, PostgreSQL `include`,
#: `include_if_exists` and `include_dir`, MySQL `!include` and `!includedir`.
_INCLUDE = re.compile(
    r"^[ \t]*!?(?P<what>include(?:_if_exists|_dir|dir)?)[ \t]*=?[ \t]*"
    r"(?P<quote>['\"]?)(?P<path>[^'\"\r\n;#]+?)(?P=quote)[ \t]*(?P<end>;?)[ \t]*(?:#.*)?\r?$",
    re.M,
)
#: Files followed through includes, at most (a glob of thousands would be read for nothing).
_MOST_INCLUDED = 64
#: The files a folder include reads: PostgreSQL's `include_dir` the `.conf` ones, MySQL's
#: `!includedir` the `.cnf` ones (a `.bak` or `.rpmsave` beside them is not read).
_DIR_FILES = {"include_dir": "*.conf", "includedir": "*.cnf"}
#: MySQL's and MariaDB's own option groups ([mysqld], [mariadb-10.11], ...), for an option
#: file not named `.cnf`.
_MYSQL_GROUP = re.compile(r"mysql|mariadb", re.I)
#: MySQL's prefix for an option the server may not know (set when it does, a warning if not).
_LOOSE = r"(?:loose[-_])?"


@register
@dataclass
class ConfigFileActuator(Actuator):
    file: str
    key: str = ""
    format: str = "equals"
    section: str | None = None
    #: For format regex: a pattern whose first group is the value, e.g. `^LEVEL = (\d+)`.
    pattern: str | None = None
    #: Most programs read their config at start; false for one read on every benchmark run.
    restart: bool = True
    kind = "config"

    def setting(self) -> str:
        return f"file:{self._target()}"

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ActuationError(f"format must be one of {', '.join(FORMATS)}", key=self.file)
        if self.format == "regex":
            if not self.pattern:
                raise ActuationError("format regex needs a pattern", key=self.file)
            try:
                if re.compile(self.pattern, re.MULTILINE).groups < 1:
                    raise ActuationError("the pattern needs one (group)", key=self.file)
            except re.error as exc:
                raise ActuationError(f"bad pattern: {exc}", key=self.file) from None
        elif not self.key:
            raise ActuationError("a config knob needs a key", key=self.file)

    @property
    def needs_restart(self) -> bool:  # type: ignore[override]
        return self.restart

    # -- reading and writing the file ------------------------------------------------------

    @property
    def path(self) -> Path:
        """The file, with hone's $HONE_* variables (e.g. the work directory) expanded."""
        return Path(expand(self.file))

    def _target(self) -> Path:
        """The file a write lands on: symlinks followed (a loop is left for open to name)."""
        return Path(os.path.realpath(self.path))

    def _read(self, path: Path | None = None) -> str:
        """The text as it is on disk: CRLF kept, bytes that are not UTF-8 carried as escapes,
        so that a write gives back every byte hone did not mean to change."""
        path = path or self.path
        try:
            return read_exact(path)
        except OSError as exc:
            raise ActuationError(f"cannot read {path}: {exc.strerror}", key=self.key) from None

    def _write(self, text: str, file: Path | None = None) -> None:
        """Replace the file's text atomically (this file, or the included one that holds the
        key), through a symlink, keeping its mode, owner and extended attributes."""
        try:
            replace_exact(file or self.path, text)
        except OSError as exc:
            shown = file or self.file
            raise ActuationError(f"cannot write {shown}: {exc.strerror}", key=self.key) from None

    def check_writable(self) -> None:
        """The rename needs the folder, and replacing the file needs it not immutable and with
        no other hard link: the file that holds the key (a file that cannot be read yet is left
        for get to name)."""
        target = self._target()
        with contextlib.suppress(ActuationError):
            target = Path(os.path.realpath(self._locate(self._read())[0]))
        for place in (target.parent, target):
            if place.exists() and not os.access(place, os.W_OK):
                raise ActuationError(
                    f"cannot write {place}: read-only (a read-only mount, or immutable: lsattr)",
                    key=self.key or self.pattern,
                )
        refuse_hard_links(target, self.key or self.pattern)

    def check_value(self, value: str) -> None:
        """Values that the file's syntax would not give back as written: a line break makes a
        new line, `#` / `;` start a comment, an outer quote is taken for quoting."""
        bad = ["\n", "\r", "\x00"] + ([] if self.format == "regex" else ["#", ";"])
        found = [repr(c) for c in bad if c in value]
        if not value.strip() and self.format != "regex":
            found.append("no text (the key's spacing would swallow it)")
        if value[:1] in ("'", '"') or value[-1:] in ("'", '"'):
            found.append("a quote at its edge")
        if found:
            what = found[0]
            raise ActuationError(
                f"value {value!r} holds {what}: {self.file} would not read it back as written",
                key=self.key or self.pattern,
            )

    # -- locating the value ----------------------------------------------------------------

    @property
    def _mysql(self) -> bool:
        """A MySQL or MariaDB option file (my.cnf, conf.d/*.cnf, my.ini, or a knob on one of
        their option groups), whose servers read `-` and `_` in an option name as one."""
        if self.format not in ("ini", "equals"):
            return False
        name = self.path.name.lower()
        return (
            name.endswith(".cnf")
            or name == "my.ini"
            or bool(self.section and _MYSQL_GROUP.match(self.section))
        )

    def _key_pattern(self) -> str:
        """The key as a regex: in a MySQL option file either of `-` and `_` where it has one,
        after an optional `loose-` / `loose_` (the server sets an option so prefixed when it
        knows it, and only warns when it does not)."""
        if not self._mysql:
            return re.escape(self.key)
        return _LOOSE + "[-_]".join(re.escape(part) for part in re.split(r"[-_]", self.key))

    def _line_pattern(self, flags: int = 0) -> re.Pattern[str]:
        if self.format == "regex":
            return re.compile(self.pattern or "", re.M)
        key = self._key_pattern()
        # `key value` (nginx's `key value;`) or `key = value`: a trailing `;` or comment and a
        # CR before the line break stay where they are.
        head = rf"[ \t]*{key}[ \t]+" if self.format == "space" else rf"[ \t]*{key}[ \t]*[=:][ \t]*"
        rest = r"(?P<value>[^\r\n#;]*?)[ \t]*(?:[;#][^\r\n]*)?\r?$"
        return re.compile(rf"^(?P<head>{head}){rest}", re.M | flags)

    def _region(self, text: str, where: str) -> tuple[int, int] | None:
        """The part of the text holding the key: the whole text, or the INI section (None when
        the text has no such section)."""
        if self.format != "ini" or not self.section:
            return 0, len(text)
        headers = list(re.finditer(rf"^[ \t]*\[{re.escape(self.section)}\][ \t]*\r?$", text, re.M))
        if len(headers) > 1:
            lines = " and ".join(str(_line_of(text, h.start())) for h in headers[:2])
            raise ActuationError(
                f"section [{self.section}] appears twice in {where}, at lines {lines}: "
                "programs differ in which one they read; merge them",
                key=self.key,
            )
        if not headers:
            return None
        following = re.compile(r"^[ \t]*\[", re.M).search(text, headers[0].end())
        return headers[0].end(), following.start() if following else len(text)

    def _matches(self, text: str, where: str) -> list[re.Match[str]]:
        """Every line setting the key, its name in any case (redis, PostgreSQL and MySQL read
        names so), in the region that holds it; for a user's regex, its non-empty matches."""
        region = self._region(text, where)
        if region is None:
            return []
        if self.format == "regex":  # an empty match (`^(.*)$` after the last newline) sets nothing
            return [m for m in self._line_pattern().finditer(text, *region) if m.group(0)]
        return list(self._line_pattern(re.I).finditer(text, *region))

    def _find(self, text: str, where: str = "") -> re.Match[str] | None:
        """The one line that sets the key in the text of `where` (this file unless named); a
        second one is refused, since redis and PostgreSQL read the last and other programs the
        first: an edit of either could do nothing."""
        where = where or self.file
        self._refuse_other_groups(text, where)
        if self._region(text, where) is None:
            raise ActuationError(f"no section [{self.section}] in {where}", key=self.key)
        matches = self._matches(text, where)
        name = self.key or self.pattern
        if len(matches) > 1:
            first, second = (_line_of(text, m.start()) for m in matches[:2])
            spellings = [self._spelled(m) for m in matches[:2]]
            how = (
                f" (as {spellings[0]} and {spellings[1]}, one option to MySQL)"
                if spellings[0] != spellings[1]
                else ""
            )
            raise ActuationError(
                f"set twice in {where}, at lines {first} and {second}{how}: programs differ "
                "in which one they read (redis, PostgreSQL and MySQL: the last), so an edit of "
                "either could do nothing; keep one",
                key=name,
            )
        if not matches:
            return None
        match, line = matches[0], _line_of(text, matches[0].start())
        if self.format == "regex":
            return match
        spelled = self._spelled(match)
        if spelled != self.key and not (self._mysql and _option(spelled) == _option(self.key)):
            raise ActuationError(
                f"{where} line {line} spells it {spelled!r}: give the key as written there",
                key=self.key,
            )
        if self.format == "space" and match.group("value").startswith(("=", ":")):
            raise ActuationError(
                f"{where} line {line} reads {self.key} {match.group('value')[0]} ...: "
                "that is format equals, not space",
                key=self.key,
            )
        return match

    def _refuse_other_groups(self, text: str, where: str) -> None:
        """A knob on a server's group in a MySQL option file: the key set in another group the
        server reads is refused, naming its line (whichever of the two is read last wins)."""
        section = self.section or ""
        if not (self._mysql and self.format == "ini" and is_server_group(section)):
            return
        for group, start, end in other_server_groups(text, section):
            match = self._line_pattern(re.I).search(text, start, end)
            if match is None:
                continue
            spelled = self._spelled(match)
            how = f" as {spelled}" if spelled != self.key else ""
            raise ActuationError(
                f"{where} line {_line_of(text, match.start())} sets it under [{group}]{how}, "
                f"which the server reads besides [{section}]: the line it reads last wins, "
                f"so an edit under [{section}] could do nothing; keep one line and give its "
                "group as the knob's section",
                key=self.key,
            )

    def _spelled(self, match: re.Match[str]) -> str:
        """The key as a line writes it (its case, and in MySQL's files its `-` or `_` and any
        `loose-`)."""
        if self.format == "regex":
            return self.pattern or ""
        return match.group("head").strip().rstrip("=:").rstrip()

    def _not_found(self, text: str) -> ActuationError:
        """Why the key is missing, where the file shows it: commented out, or in the other
        `key value` / `key = value` form."""
        name = self.key or self.pattern
        hint = ""
        if self.format != "regex":
            key = self._key_pattern()
            found = re.search(rf"^[ \t]*[#;][ \t]*{key}(?=[ \t=:])", text, re.M | re.I)
            other = re.search(rf"^[ \t]*{key}(?=[ \t=:])", text, re.M | re.I)
            if found:
                hint = (
                    f" (line {_line_of(text, found.start())} has it commented out: write it "
                    "with the value in use, so that hone has a value to put back)"
                )
            elif other:
                hint = f" (line {_line_of(text, other.start())} sets it in another format)"
        what = "pattern" if self.format == "regex" else "key"
        return ActuationError(f"{what} not found in {self.file}{hint}", key=name)

    def _locate(self, text: str) -> tuple[Path, str]:
        """The file whose line sets the key, and its text: this file, or, in a MySQL option
        file, the one file it includes that sets it (the server reads it there). A key also set
        in another file read with this one is refused like a key set twice: which one the
        program reads depends on the program and on where the include stands. So is a key in
        the postgresql.auto.conf beside a postgresql.conf (ALTER SYSTEM's, read last)."""
        self._refuse_other_groups(text, self.file)
        own = self._matches(text, self.file)
        here = f"{self.file} line {_line_of(text, own[0].start())}" if own else ""
        found = (self.path, text)
        for other, inner, why in self._also_read(text):
            self._refuse_other_groups(inner, str(other))
            matches = self._matches(inner, str(other))
            if not matches:
                continue
            there = f"{other} line {_line_of(inner, matches[0].start())}"
            if not here and self._mysql:
                here, found = there, (other, inner)
                continue
            spelled = self._spelled(matches[0])
            if self.format != "regex" and spelled != self.key:
                there += f" as {spelled}"
            both = (
                f"set in {here} and again in {there}"
                if here
                else f"set in {there}, and an edit would add it to {self.file}"
            )
            raise ActuationError(
                f"{both} ({why}): the program reads one of them, so an edit of the other "
                "could do nothing; keep one",
                key=self.key or self.pattern,
            )
        return found

    def _also_read(self, text: str) -> Iterator[tuple[Path, str, str]]:
        """Every other file the program reads with this one, its text and why: the files it
        includes, in the order it reads them, and a postgresql.conf's postgresql.auto.conf."""
        target = self._target()
        seen = {target}
        auto = target.with_name("postgresql.auto.conf")
        if target.name == "postgresql.conf" and auto.is_file():
            seen.add(auto)
            yield auto, self._read(auto), "which PostgreSQL reads after it"
        root = self._nginx_root(text)
        pending = [(self.path, text)]
        while pending:
            path, body = pending.pop(0)
            for include in _INCLUDE.finditer(body):
                line = _line_of(body, include.start())
                name = include["path"].strip()
                if self._mysql and not os.path.isabs(name):
                    raise ActuationError(
                        f"{path} line {line}: !{include['what']} {name} is a relative path, which "
                        "MySQL and MariaDB take from the server's working directory, not from "
                        "this file's folder: hone cannot tell which file the server reads; give "
                        "the full path",
                        key=self.key,
                    )
                folder = root or path.parent
                for included in _included_files(folder, include.group("what"), name):
                    if included in seen or len(seen) > _MOST_INCLUDED:
                        continue
                    seen.add(included)
                    inner = self._read(included)
                    yield included, inner, f"included from {path} line {line}"
                    pending.append((included, inner))

    def _nginx_root(self, text: str) -> Path | None:
        """The folder nginx resolves a relative include against, in every file it reads: that
        of its main file (`nginx -c`'s), not the including file's. A file is nginx's when it is
        an nginx.conf or includes with `include ...;`; its main file is the nginx.conf at or
        above it (/etc/nginx's for /etc/nginx/sites-enabled/app), else itself. None for others."""
        here = Path(os.path.abspath(self.path))
        ends = any(m.group("end") for m in _INCLUDE.finditer(text))
        if self.format != "space" or not (ends or here.name == "nginx.conf"):
            return None
        for folder in here.parents:
            if (folder / "nginx.conf").is_file():
                return folder
        return here.parent

    def get(self) -> str:
        text = self._read()
        path, body = self._locate(text)
        return self.value_in(body, str(path) if body is not text else "")

    def value_in(self, text: str, where: str = "") -> str:
        """The key's value in this text of the file, or of the included file `where` (a remote
        host's file is read elsewhere)."""
        match = self._find(text, where)
        if match is None:
            raise self._not_found(text)
        value = match.group("value") if self.format != "regex" else match.group(1)
        value = _unquote(value.strip())
        if any("\udc80" <= c <= "\udcff" for c in value):
            raise ActuationError(
                f"the value in {where or self.file} holds bytes that are not UTF-8", key=self.key
            )
        return value

    def set(self, value: str) -> None:
        text = self._read()
        path, body = self._locate(text)
        if body is text:
            self._write(self.edited(text, value))
        else:
            self._write(self.edited(body, value, str(path)), path)

    def edited(self, text: str, value: str, where: str = "") -> str:
        """The file's text (or the included file `where`'s) with the key set to `value`, every
        other byte as it was."""
        match = self._find(text, where)
        if match is None:
            if self.format == "regex":
                raise self._not_found(text)
            region = self._region(text, self.file)
            end = region[1] if region else len(text)
            newline = "\r\n" if "\r\n" in text else "\n"
            separator = " " if self.format == "space" else " = "
            line = f"{self.key}{separator}{value}{newline}"
            prefix = (
                text[:end] if text[:end].endswith("\n") or not text[:end] else text[:end] + newline
            )
            return prefix + line + text[end:]
        group = "value" if self.format != "regex" else 1
        old = match.group(group)
        quote = old.strip()[:1] if old.strip()[:1] in "\"'" and len(old.strip()) > 1 else ""
        start, end = match.span(group)
        return text[:start] + f"{quote}{value}{quote}" + text[end:]

    def spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"kind": self.kind, "file": str(self.path), "format": self.format}
        for name in ("key", "section", "pattern"):
            if getattr(self, name):
                spec[name] = getattr(self, name)
        if not self.restart:
            spec["restart"] = False
        return spec

    def describe(self) -> str:
        where = f"[{self.section}] " if self.section else ""
        return f"config({Path(self.file).name}: {where}{self.key or self.pattern})"


def refuse_hard_links(path: str | Path, key: str) -> None:
    """ActuationError for a file with other hard links: hone replaces a file by rename, which
    gives this name a new file and leaves the other names with the old text. And for a folder
    where a file is named."""
    target = Path(os.path.realpath(path))
    if target.is_dir():  # a folder's link count is its subfolders', not other names of it
        raise ActuationError(f"{target} is a folder, not a file", key=key)
    links = target.stat().st_nlink if target.exists() else 1
    if links > 1:
        raise ActuationError(
            f"{target} has {links} hard links: hone replaces a file by rename, which would "
            "leave the other names with the old text (the program may read one of them) "
            "and never join them again; make it one file, or a symlink",
            key=key,
        )


def read_exact(path: str | os.PathLike[str]) -> str:
    """A file's text as it is on disk: CRLF kept, bytes that are not UTF-8 carried as escapes,
    so that `replace_exact` gives back every byte nobody meant to change."""
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as handle:
        return handle.read()


def replace_exact(file: str | os.PathLike[str], text: str, mode: int = 0o644) -> None:
    """Replace a file's text atomically (temporary file, rename), every byte as given. A symlink
    is written through: the rename lands on its target, so the link stays a link; the target's
    mode, owner and extended attributes (ACLs, SELinux labels) are carried over to the new
    inode. A file that does not exist yet is created with `mode`. OSError on failure."""
    path = Path(os.path.realpath(file))
    try:
        stat: os.stat_result | None = path.stat()
    except FileNotFoundError:
        stat = None
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        # Atomic by rename; no fsync: the journal, not this file, is the durable record.
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape", newline="") as out:
            out.write(text)
        if stat is None:
            os.chmod(temp, mode)
        else:
            os.chown(temp, stat.st_uid, stat.st_gid)
            os.chmod(temp, stat.st_mode & 0o7777)
            _copy_xattrs(path, temp)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _copy_xattrs(source: Path, target: str) -> None:
    """Extended attributes where the file system has them (ACLs live there too)."""
    try:
        names = os.listxattr(source)
    except OSError:
        return
    for name in names:
        try:
            os.setxattr(target, name, os.getxattr(source, name))
        except OSError:
            continue  # a security label the kernel does not let us copy: keep the default


def _option(name: str) -> str:
    """A MySQL option's name as the server compares it: no `loose-`, `-` read as `_`."""
    return re.sub(_LOOSE, "", name, count=1, flags=re.I).replace("-", "_")


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _included_files(folder: Path, what: str, name: str) -> list[Path]:
    """The regular files an include line names, a relative name taken in `folder`: a file, a
    glob (redis, nginx) or a folder (`include_dir`, `!includedir`)."""
    pattern = folder / name.strip()
    if what in _DIR_FILES:
        pattern = pattern / _DIR_FILES[what]
    return [
        Path(os.path.realpath(found))
        for found in sorted(glob.glob(str(pattern)))
        if os.path.isfile(found)
    ]


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text
