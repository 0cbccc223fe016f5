"""Routers for the capabilities beside tuning; each is included only when its library exists."""

from __future__ import annotations

from typing import Any


def available() -> list[Any]:
    routers: list[Any] = []
    return routers
