"""Find and load a project: a hone YAML file, a folder holding one, or an A-Tune pair."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hone.errors import HoneError
from hone.project import atune
from hone.project.hone_format import load_hone
from hone.project.model import Project
from hone.project.yamlio import load_yaml


def load_project(
    path: str | Path | None = None,
    *,
    server: str | Path | None = None,
    client: str | Path | None = None,
) -> Project:
    """`path` is a hone file or a folder (hone.yaml, else one A-Tune server/client pair)."""
    if server or client:
        if not (server and client):
            raise HoneError("an A-Tune project needs both --server and --client")
        return atune.load_pair(Path(server), Path(client))
    if path is None:
        raise HoneError("name a project: a folder, a hone YAML file, or --server/--client")
    target = Path(path)
    if not target.exists():
        raise HoneError("no such file or folder", file=target)
    if target.is_file():
        return load_hone(target)
    for name in ("hone.yaml", "hone.yml"):
        if (target / name).is_file():
            return load_hone(target / name)
    server_file, client_file = find_atune_pair(target)
    return atune.load_pair(server_file, client_file)


def load_atune_folder(
    path: str | Path | None,
    *,
    server: str | Path | None = None,
    client: str | Path | None = None,
) -> Project:
    """What `hone convert` converts: a folder's A-Tune pair, whatever hone.yaml is beside it
    (`hone convert . > hone.yaml` has the shell create that one, empty, before hone runs);
    a folder without A-Tune files, a file or --server/--client as load_project reads them."""
    folder = Path(path) if path is not None and not (server or client) else None
    if folder and folder.is_dir() and any(map(_is_atune_file, folder.glob("*.y*ml"))):
        return atune.load_pair(*find_atune_pair(folder))
    return load_project(path, server=server, client=client)


def _is_atune_file(path: Path) -> bool:
    try:
        data = load_yaml(path)
    except HoneError:
        return False
    return atune.is_server(data) or atune.is_client(data)


def declared_name(path: str | Path) -> str | None:
    """The project name a file or folder declares, read alone (hone's `name`, an A-Tune
    server's `project`): what `hone restore` needs of a project edited since into one that no
    longer loads, whose journal still holds the way back. None when no one name is there."""
    target = Path(path)
    if target.is_dir():
        files = [target / n for n in ("hone.yaml", "hone.yml") if (target / n).is_file()]
    else:
        files = [target]
    names = set()
    for file in files[:1] or sorted(target.glob("*.y*ml")):
        try:
            data = load_yaml(file)
        except HoneError:
            continue
        if not isinstance(data, dict):
            continue
        key = "name" if files else "project"
        if key == "project" and not atune.is_server(data):
            continue
        if isinstance(data.get(key), str | int) and not isinstance(data.get(key), bool):
            names.add(str(data[key]))
    return names.pop() if len(names) == 1 else None


def require_trusted(path: str | Path) -> None:
    """Refuse a project that another local user could change: hone runs its commands as root,
    so a file or folder writable by others (or owned by someone else) would let that user run
    commands as root, as sshd refuses such key files."""
    target = Path(path).resolve()
    if not target.exists():  # a served project removed while `hone serve` runs
        raise HoneError("no such file or folder", file=target)
    files = [target] if target.is_file() else [p for p in target.glob("*.y*ml") if p.is_file()]
    folder = target.parent if target.is_file() else target
    # a sticky folder (/tmp) lets no one else replace a file they do not own
    sticky = folder.stat().st_mode & 0o1000 and target.is_file()
    for item in [*([] if sticky else [folder]), *files]:
        info = item.stat()
        if info.st_mode & 0o022:
            raise HoneError(
                "writable by other users: chmod go-w it (hone runs its commands as root)",
                file=item,
            )
        if info.st_uid not in (0, os.geteuid()):
            raise HoneError(f"owned by another user (uid {info.st_uid})", file=item)


def find_atune_pair(folder: Path) -> tuple[Path, Path]:
    """The server and client YAML of one project in a folder, paired by their project name."""
    servers: dict[str, Path] = {}
    clients: dict[str, Path] = {}
    broken: list[HoneError] = []
    for candidate in sorted(folder.glob("*.y*ml")):
        try:
            data = load_yaml(candidate)
        except HoneError as exc:
            broken.append(exc)
            continue
        name = str(data.get("project", "")) if isinstance(data, dict) else ""
        if atune.is_server(data):
            servers.setdefault(name, candidate)
        elif atune.is_client(data):
            clients.setdefault(name, candidate)
    pairs = [(servers[n], clients[n]) for n in clients if n in servers]
    if len(pairs) == 1:
        for exc in broken:  # it may be the project the user meant: say so, then go on
            print(f"hone: warning: {exc} (skipped)", file=sys.stderr)
        return pairs[0]
    if broken and not pairs:
        raise broken[0]
    found = f"{len(servers)} server and {len(clients)} client files"
    if len(pairs) > 1:
        names = ", ".join(sorted(n for n in clients if n in servers))
        raise HoneError(
            f"several A-Tune projects here ({names}): name the files with --server and --client",
            file=folder,
        )
    raise HoneError(
        f"expected hone.yaml or an A-Tune server and client YAML of one project, found {found}",
        file=folder,
    )
