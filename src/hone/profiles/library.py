"""Finding and reading profiles. A profile's name is its path below a profile folder with `/`
turned into `-` and without `.conf` (`include/throughput-performance.conf` is
`include-throughput-performance`); `[main] include = a, b` pulls in other profiles first, and
later values win. `{disk}`, `{network}` and `{user}` are replaced by the devices and user hone
detects (or HONE_DISK, HONE_NETWORK, HONE_USER), and the profile records which it used."""

from __future__ import annotations

import configparser
import os
from dataclasses import dataclass, field
from pathlib import Path

from hone.errors import HoneError
from hone.paths import state_dir

#: hone's own profiles, shipped with the package (one per workload class of `hone analyze`).
BUILTIN = Path(__file__).with_name("builtin")
#: Where an A-Tune installation keeps its profiles; used when present.
ATUNE_SYSTEM = Path("/usr/lib/atuned/profiles")
#: Every section of A-Tune's format; anything else is a typo and is refused.
SECTIONS = ("main", "sysctl", "sysfs", "systemctl", "ulimit", "script", "bootloader.grub2",
            "kernel_config", "bios", "tip", "check", "schedule_policy", "file_config")  # fmt: skip

#: Sections whose every item sets something: an item without a value there is a mistake.
VALUED = ("sysctl", "sysfs", "systemctl", "ulimit")


@dataclass
class Item:
    section: str
    key: str
    value: str
    source: str  # the profile it came from
    #: the file and line that set it (an included profile's, for an item that came from it)
    path: Path | None = None
    line: int | None = None


@dataclass
class Profile:
    name: str
    path: Path
    items: list[Item] = field(default_factory=list)
    includes: list[str] = field(default_factory=list)
    #: placeholder -> (what it became, where that came from), for the placeholders used
    placeholders: dict[str, tuple[str, str]] = field(default_factory=dict)

    def section(self, name: str) -> list[Item]:
        return [item for item in self.items if item.section == name]


def placeholder_values() -> dict[str, tuple[str, str]]:
    """`{disk}`, `{network}` and `{user}`: the value and whether it was set or detected."""
    # imported here: the project package loads NumPy and YAML, which most profiles never need
    from hone.project.devices import device_environment

    devices = device_environment()
    values = {}
    for name, variable in (("disk", "HONE_DISK"), ("network", "HONE_NETWORK")):
        given = os.environ.get(variable)
        values[name] = (given, f"from {variable}") if given else (devices[variable], "detected")
    user = os.environ.get("HONE_USER")
    values["user"] = (user, "from HONE_USER") if user else ("root", "default")
    return values


#: Where the devices a placeholder names are listed.
DEVICES = {"disk": Path("/sys/block"), "network": Path("/sys/class/net")}


def not_here(placeholder: str, value: str, how: str) -> str | None:
    """What is wrong with a device given in HONE_DISK or HONE_NETWORK that this machine does not
    have, for a profile about to be applied (`info` shows one for another machine): every item
    naming it failed as a missing file, `block/sdz/queue/read_ahead_kb: cannot read`, which
    reads as a fault of the profile."""
    folder = DEVICES.get(placeholder)
    if folder is None or how == "detected":
        return None
    if "/" not in value and value not in (".", "..") and (folder / value).exists():
        return None
    here = ", ".join(sorted(p.name for p in folder.iterdir())) if folder.is_dir() else "none"
    kind = "interface" if placeholder == "network" else placeholder
    return f"HONE_{placeholder.upper()}={value}: no such {kind} here ({here})"


class ProfileLibrary:
    """Profile folders searched in order: the user's own (`hone profile define`), then each
    folder of HONE_PROFILE_PATH (colon-separated; e.g. A-Tune's profiles folder), then an
    installed A-Tune's, then hone's built-in profiles. The first profile of a name wins."""

    def __init__(self, folders: list[Path] | None = None) -> None:
        if folders is None:
            folders = [state_dir() / "profiles"]
            folders += [Path(p) for p in os.environ.get("HONE_PROFILE_PATH", "").split(":") if p]
            folders += [ATUNE_SYSTEM, BUILTIN]
        self.folders = folders

    def names(self) -> dict[str, Path]:
        found: dict[str, Path] = {}
        for folder in self.folders:
            for path in sorted(folder.rglob("*.conf")) if folder.is_dir() else []:
                name = str(path.relative_to(folder).with_suffix("")).replace(os.sep, "-")
                found.setdefault(name, path)
        return found

    def load(self, name: str, _seen: tuple[str, ...] = ()) -> Profile:
        paths = self.names()
        if name not in paths:
            raise HoneError(f"no profile named {name!r} (see `hone profile list`)")
        if name in _seen:
            raise HoneError(f"profile {name!r} includes itself: {' -> '.join((*_seen, name))}")
        path = paths[name]
        parser = _parse(path)
        lines = _key_lines(path)
        profile = Profile(name, path)
        if parser.has_option("main", "include"):
            profile.includes = [
                n.strip() for n in (parser["main"]["include"] or "").split(",") if n.strip()
            ]
        for included in profile.includes:
            try:
                base = self.load(included, (*_seen, name))
            except HoneError as exc:
                raise HoneError(
                    f"include {included!r}: {exc.message}", file=path, key="include"
                ) from None
            profile.items += base.items
            profile.placeholders.update(base.placeholders)
        values: dict[str, tuple[str, str]] | None = None  # detected at the first placeholder
        # by (section, key): an item of this profile replaces an included one, and moves last
        items = {(i.section, i.key): i for i in profile.items}
        for section in parser.sections():
            if section == "main":
                continue
            for raw_key, raw_value in parser[section].items():
                key, value = raw_key, (raw_value or "").strip()
                if section == "tip" and "=" in value:  # `advice = kind`; the advice may hold '='
                    advice, _, kind = f"{key}={value}".rpartition("=")
                    key, value = advice.strip(), kind.strip()
                if values is None and "{" in key + value:
                    values = placeholder_values()
                for placeholder, (actual, how) in (values or {}).items():
                    token = "{" + placeholder + "}"
                    if token in key or token in value:
                        if not actual:
                            raise HoneError(
                                f"{token} is used but no {placeholder} was found: set "
                                f"HONE_{placeholder.upper()}",
                                file=path,
                                key=raw_key,
                            )
                        key, value = key.replace(token, actual), value.replace(token, actual)
                        profile.placeholders[placeholder] = (actual, how)
                items.pop((section, key), None)
                where = lines.get((section, raw_key))
                if not value and section in VALUED:
                    # found when the profile is defined or shown, in the file the user wrote,
                    # not at apply in hone's copy of it
                    raise HoneError(
                        "no value: write `key = value`", file=path, line=where, key=raw_key
                    )
                items[section, key] = Item(section, key, value, name, path, where)
        profile.items = list(items.values())
        return profile


def _parse(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(
        allow_no_value=True,
        delimiters=("=",),
        comment_prefixes=("#",),
        strict=False,
        interpolation=None,
    )
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    try:
        text = path.read_text(encoding="utf-8-sig")
        parser.read_string(text, source=str(path))
    except configparser.Error as exc:
        raise HoneError(
            f"cannot read profile: {_reason(exc)}", file=path, line=_line(exc)
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = " ".join(str(exc).split())
        raise HoneError(f"cannot read profile: {reason}", file=path) from None
    for section in parser.sections():
        for key, value in parser[section].items():
            if value and "\n" in value.strip():
                raise HoneError(
                    "an indented line continues this value: write "
                    "one `key = value` per line, without indentation",
                    file=path,
                    line=_continued(text, value),
                    key=key,
                )
    unknown = [s for s in parser.sections() if s not in SECTIONS]
    if unknown:
        header = f"[{unknown[0]}]"
        lines = enumerate(text.splitlines(), 1)
        line = next((n for n, t in lines if t.strip().startswith(header)), None)
        raise HoneError(
            f"unknown section {header} (known: {', '.join(SECTIONS)})", file=path, line=line
        )
    return parser


def _key_lines(path: Path) -> dict[tuple[str, str], int]:
    """The line that sets each (section, key) of a file already parsed (the last one, as a
    repeated key's last value wins): an error about an item names its line."""
    found: dict[tuple[str, str], int] = {}
    section = ""
    for number, text in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), 1):
        stripped = text.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            section = stripped[1:-1].strip()
        elif stripped and not stripped.startswith("#"):
            found[section, stripped.partition("=")[0].strip()] = number
    return found


def _continued(text: str, value: str) -> int | None:
    """The line of the first indented line that configparser joined to `value`."""
    rest = next((part.strip() for part in value.strip().splitlines()[1:] if part.strip()), "")
    lines = enumerate(text.splitlines(), 1)
    return next((n for n, t in lines if t[:1].isspace() and t.strip() == rest), None)


def _line(exc: configparser.Error) -> int | None:
    """The line configparser found wrong, which its messages bury among the file's name."""
    errors = getattr(exc, "errors", None)  # ParsingError: [(line, text), ...]
    return getattr(exc, "lineno", None) or (errors[0][0] if errors else None)


def _reason(exc: configparser.Error) -> str:
    """configparser's first line (the rest repeat the file's name and line), with the text
    found there: `File contains no section headers: 'name: x'`."""
    errors = getattr(exc, "errors", None)
    if errors:  # ParsingError: the text is already quoted
        return f"not a [section] nor `key = value`: {errors[0][1]}"
    head = str(exc).splitlines()[0].rstrip(".")
    text = getattr(exc, "line", None)
    return f"{head}: {text.strip()!r}" if text else head
