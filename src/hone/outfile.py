"""Files a command writes where the user says (`-o`, `--name`): an existing one is replaced only
when asked (--force), and a write is whole or absent. A model or project named by mistake would
otherwise be lost, and a crash mid-write would leave half a file where a good one was. The
folder it goes into must exist: hone creates folders of its own, never the user's."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from hone.errors import HoneError


def refuse_existing(path: Path, force: bool) -> None:
    """Before any work is done: a folder is never a file to write, and a file is kept unless
    `force` (the command's --force)."""
    if path.is_dir():
        raise HoneError(os.strerror(errno.EISDIR), file=path)
    if path.exists() and not force:
        raise HoneError("exists: give --force to replace it, or write elsewhere", file=path)


def is_stdout(path: Path | None) -> bool:
    """`-o -`: standard output, as `hone collect -o -` and most tools read it, never a file
    named `-` in the current folder (which `hone convert -o -` wrote, saying nothing)."""
    return path is not None and str(path) == "-"


def refuse_stdout(path: Path | None, what: str) -> None:
    """`-o -` for what cannot go to standard output (a model, a folder of files)."""
    if is_stdout(path):
        raise HoneError(f"-o -: {what} is not written to standard output: name a file or folder")


def require_folder(path: Path) -> None:
    """Before any work is done: the folder `path` goes into exists, else one line naming it
    (exit code 2), as cp or gcc -o say. Creating it would turn a typo in the path into a
    report written somewhere nobody looks."""
    folder = path.parent
    if not folder.is_dir():
        raise HoneError(f"no folder {folder}", file=path)


def write_atomic(path: Path, data: bytes) -> None:
    """Write to a temporary file beside `path`, flush it to disk, then rename it over `path`:
    a reader (or a crash) sees the old file or the new one. An existing file's mode is kept."""
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
    try:
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".new")
    except OSError as exc:  # named by the file asked for, not the temporary one
        raise HoneError(exc.strerror or str(exc), file=path) from None
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except OSError as exc:
        Path(temp).unlink(missing_ok=True)
        raise HoneError(exc.strerror or str(exc), file=path) from None
    except BaseException:  # Ctrl-C mid-write: no temporary file left behind
        Path(temp).unlink(missing_ok=True)
        raise
