"""Workload recognition and bottleneck analysis (A-Tune's "online static tuning").

from hone import analyze
result = analyze.analyze(15)       # sample 15 s: result.cls, .confidence, .features, .bottleneck
analyze.apply(result)              # apply the profile mapped to the class (a transaction)
"""

from __future__ import annotations

from hone.analyze.analysis import Analysis, analyze, classify
from hone.analyze.dataset import CLASSES, Run, class_of, load_runs
from hone.analyze.model import Model, default_model, fit, load, save
from hone.analyze.use import Resource
from hone.errors import HoneError

__all__ = [
    "CLASSES",
    "Analysis",
    "Model",
    "Resource",
    "Run",
    "analyze",
    "apply",
    "class_of",
    "classify",
    "default_model",
    "fit",
    "load",
    "load_runs",
    "save",
]


def apply(analysis: Analysis):  # type: ignore[no-untyped-def]
    """Apply the profile mapped to the analysed class through hone.profiles (all or nothing;
    `hone profile rollback` undoes it). Returns the profiles' ApplyResult."""
    from hone import profiles

    if not analysis.profile:
        raise HoneError(f"no profile is mapped to class {analysis.cls!r}")
    return profiles.apply(analysis.profile)
