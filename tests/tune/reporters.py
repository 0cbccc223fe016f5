"""A reporter for tests that read what a run says in passing (its notes)."""

from __future__ import annotations

from hone.tune.console import Reporter


class Notes(Reporter):
    """Keeps every note of a run, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.notes: list[str] = []

    def note(self, message: str) -> None:
        self.notes.append(message)
