"""The durable journal of original values: the path back after any crash."""

from hone.journal.journal import Journal, Original, RestoreOutcome

__all__ = ["Journal", "Original", "RestoreOutcome"]
