"""Files under /sys: transparent huge pages, block-queue settings, CPU governors, ...

Many of them show a list of choices with the active one in brackets (`always [madvise] never`);
`get` returns the active word, and that is what is compared after a set. A block queue's
scheduler takes `deadline` for `mq-deadline` (its alias since blk-mq; A-Tune's profiles and
tuned's still write the old name) and then reads `mq-deadline`: the two are the same value."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hone.errors import ActuationError
from hone.knobs.base import Actuator, register

SYS = Path("/sys")
_SELECTED = re.compile(r"\[([^\]]+)\]")
#: The kernel's other names for a block queue's schedulers (elevator_alias in block/).
_SCHEDULER_ALIASES = {"deadline": "mq-deadline"}


@register
@dataclass
class SysfsActuator(Actuator):
    path: str
    kind = "sysfs"

    def setting(self) -> str:
        return f"sysfs:{os.path.realpath(self.path)}"

    def __post_init__(self) -> None:
        """Refused when the project is loaded, not at the first set: a path outside /sys."""
        if not isinstance(self.path, str) or not self.path:
            raise ActuationError("a sysfs knob needs a path under /sys", key="sysfs")
        if not os.path.normpath(self.path).startswith("/sys/"):
            raise ActuationError(f"{self.path!r} is not under /sys", key=self.path)

    def _file(self) -> Path:
        path = Path(self.path).resolve()
        if SYS not in path.parents:
            raise ActuationError(f"{self.path!r} is not under /sys", key=self.path)
        return path

    def get(self) -> str:
        try:
            text = self._file().read_text().strip()
        except OSError as exc:
            raise ActuationError(f"cannot read: {exc.strerror}", key=self.path) from None
        selected = _SELECTED.search(text)
        return selected.group(1) if selected else text

    def normalise(self, text: str) -> str:
        text = super().normalise(text)
        if self.path.rstrip("/").endswith("/queue/scheduler"):
            return _SCHEDULER_ALIASES.get(text, text)
        return text

    def set(self, value: str) -> None:
        try:
            with open(self._file(), "w") as handle:
                handle.write(str(value))
        except OSError as exc:
            raise ActuationError(
                f"cannot set {value!r}: {exc.strerror}{self._choices()}{self._depth()}",
                key=self.path,
            ) from None

    def _choices(self) -> str:
        """The choices a refused value was not among, for a file that lists them."""
        try:
            text = self._file().read_text().strip()
        except OSError:
            return ""
        if not _SELECTED.search(text):
            return ""
        return " (it offers: " + " ".join(_SELECTED.sub(r"\1", text).split()) + ")"

    def _depth(self) -> str:
        """Why a queue refuses an nr_requests: without a scheduler it takes at most the
        device's own depth (A-Tune's mysql-ssd profile asks 2048 of a virtio disk's 128)."""
        path = self._file()
        if path.name != "nr_requests":
            return ""
        try:
            chosen = _SELECTED.search((path.parent / "scheduler").read_text())
            tags = (path.parent.parent / "mq" / "0" / "nr_tags").read_text().strip()
        except OSError:
            return ""
        if chosen is None or chosen.group(1) != "none":
            return ""
        return f" (with scheduler none, a queue takes at most the device's depth, {tags})"

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": self.path}
