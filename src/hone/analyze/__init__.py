"""Workload recognition and bottleneck analysis (A-Tune's "online static tuning").

from hone import analyze
result = analyze.analyze()         # sample 45 s: result.cls, .confidence, .features, .bottleneck
analyze.apply(result)              # apply the profile mapped to the class (a transaction)

The names below load their module on first use: every `hone` command imports this package to
register `hone analyze`, and the classifier's scikit-learn takes seconds to import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hone.errors import HoneError

if TYPE_CHECKING:
    from hone.analyze.analysis import Analysis

#: public name -> the module of this package that defines it
_EXPORTS = {
    "Analysis": "analysis",
    "analyze": "analysis",
    "classify": "analysis",
    "CLASSES": "dataset",
    "Run": "dataset",
    "class_of": "dataset",
    "load_runs": "dataset",
    "Model": "model",
    "default_model": "model",
    "fit": "model",
    "load": "model",
    "save": "model",
    "Resource": "use",
}

__all__ = [*_EXPORTS, "apply"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hone.analyze' has no attribute {name!r}")
    return getattr(importlib.import_module(f"hone.analyze.{module}"), name)


def apply(analysis: Analysis):  # type: ignore[no-untyped-def]
    """Apply the profile mapped to the analysed class through hone.profiles (all or nothing;
    `hone profile rollback` undoes it). Returns the profiles' ApplyResult."""
    from hone import profiles

    if not analysis.profile:
        raise HoneError(f"no profile is mapped to class {analysis.cls!r}")
    return profiles.apply(analysis.profile)
