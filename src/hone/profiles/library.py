"""Finding and reading profiles. A profile's name is its path below a profile folder with `/`
turned into `-` and without `.conf` (`include/throughput-performance.conf` is
`include-throughput-performance`); `[main] include = a, b` pulls in other profiles first, and
later values win. `{disk}` and `{network}` are replaced by the detected devices."""

from __future__ import annotations

import configparser
import os
from dataclasses import dataclass, field
from pathlib import Path

from hone.errors import HoneError
from hone.paths import state_dir
from hone.project.devices import device_environment

#: Sections whose items hone sets; the others are checks or advice.
SETTABLE = ("sysctl", "sysfs")


@dataclass
class Item:
    section: str
    key: str
    value: str
    source: str  # the profile it came from


@dataclass
class Profile:
    name: str
    path: Path
    items: list[Item] = field(default_factory=list)
    includes: list[str] = field(default_factory=list)

    def section(self, name: str) -> list[Item]:
        return [item for item in self.items if item.section == name]


class ProfileLibrary:
    """Profile folders searched in order: hone's own (user-defined) profiles first, then each
    folder of HONE_PROFILE_PATH (colon-separated), e.g. A-Tune's profiles folder."""

    def __init__(self, folders: list[Path] | None = None) -> None:
        if folders is None:
            folders = [state_dir() / "profiles"]
            folders += [Path(p) for p in os.environ.get("HONE_PROFILE_PATH", "").split(":") if p]
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
        parser = configparser.ConfigParser(
            allow_no_value=True,
            delimiters=("=",),
            comment_prefixes=("#",),
            strict=False,
            interpolation=None,
        )
        parser.optionxform = str  # type: ignore[assignment,method-assign]
        try:
            parser.read_string(path.read_text(), source=str(path))
        except (configparser.Error, OSError) as exc:
            reason = " ".join(str(exc).split())
            raise HoneError(f"cannot read profile: {reason}", file=path) from None
        profile = Profile(name, path)
        if parser.has_option("main", "include"):
            profile.includes = [
                n.strip() for n in (parser["main"]["include"] or "").split(",") if n.strip()
            ]
        for included in profile.includes:
            try:
                profile.items += self.load(included, (*_seen, name)).items
            except HoneError as exc:
                raise HoneError(
                    f"include {included!r}: {exc.message}", file=path, key="include"
                ) from None
        devices = device_environment()
        for section in parser.sections():
            if section == "main":
                continue
            for key, value in parser[section].items():
                key = key.replace("{disk}", devices["HONE_DISK"]).replace(
                    "{network}", devices["HONE_NETWORK"]
                )
                value = (value or "").strip()
                profile.items = [
                    i for i in profile.items if not (i.section == section and i.key == key)
                ]
                profile.items.append(Item(section, key, value, name))
        return profile
