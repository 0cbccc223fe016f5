"""Study storage: Optuna's RDB storage (SQLAlchemy), SQLite by default, any SQLAlchemy URL."""

from hone.storage.store import StudyRecord, StudyStore, TrialRecord

__all__ = ["StudyRecord", "StudyStore", "TrialRecord"]
