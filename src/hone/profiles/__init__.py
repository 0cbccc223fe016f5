"""Static tuning profiles (A-Tune's INI format): load, apply as a transaction, roll back, check.

from hone import profiles
profiles.list_profiles()          # [ProfileInfo(name, path, active), ...]
result = profiles.apply("hone-web")
profiles.check()                  # the live system against the active profile
profiles.rollback()

The names below load their module on first use: every `hone` command imports this package to
register `hone profile`, and the profile library imports the project loader (NumPy).
"""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> the module of this package that defines it
_EXPORTS = {
    "Item": "library",
    "Profile": "library",
    "ProfileLibrary": "library",
    "ApplyResult": "transaction",
    "Outcome": "transaction",
    "active_profile": "transaction",
    "apply_profile": "transaction",
    "check_profile": "transaction",
    "rollback": "transaction",
    "ProfileInfo": "named",
    "apply": "named",
    "check": "named",
    "define": "named",
    "list_profiles": "named",
    "load": "named",
    "undefine": "named",
    "update": "named",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hone.profiles' has no attribute {name!r}")
    return getattr(importlib.import_module(f"hone.profiles.{module}"), name)
