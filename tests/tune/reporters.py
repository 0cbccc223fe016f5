"""A reporter for tests that read what a run says in passing (its notes and warnings)."""

from __future__ import annotations

from hone.tune.console import Reporter


class Notes(Reporter):
    """Keeps every note and every warning of a run, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.notes: list[str] = []
        self.warnings: list[str] = []

    def note(self, message: str) -> None:
        self.notes.append(message)

    def warn(self, message: str) -> None:
        self.warnings.append(message)
