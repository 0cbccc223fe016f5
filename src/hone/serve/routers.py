"""Routers for the capabilities beside tuning; each is included only when its library exists."""

from __future__ import annotations

import importlib.util
from typing import Any

#: capability -> (library module it needs, router module here)
OPTIONAL = {
    "analysis": ("hone.analyze", "hone.serve.analysis"),
    "diagnoses": ("hone.diagnose", "hone.serve.diagnoses"),
    "machine": ("hone.collect", "hone.serve.machine"),
    "profiles": ("hone.profiles", "hone.serve.profiles"),
}


def available() -> list[Any]:
    routers = []
    for needed, module in OPTIONAL.values():
        if importlib.util.find_spec(needed) is not None:
            routers.append(importlib.import_module(module).router)
    return routers
