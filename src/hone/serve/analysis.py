"""Workload analysis API: sample the machine for a while, name the workload class with its
confidence and the features behind it, the bottleneck in USE terms, and the profile mapped to
the class (applied, if the user wants, through the profiles API: a transaction)."""

from __future__ import annotations

import asyncio
from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Query

from hone.analyze import Analysis, analyze
from hone.analyze.features import WINDOW_SECONDS

router = APIRouter(prefix="/api/analysis", tags=["analysis"])


def analysis_dict(result: Analysis) -> dict[str, Any]:
    return {
        "class": result.cls,
        "confidence": result.confidence,
        "probabilities": result.probabilities,
        "features": [
            {"name": name, "value": value, "typical": typical}
            for name, value, typical in result.features
        ],
        "resources": [{**asdict(r), "verdict": r.verdict} for r in result.resources],
        "bottleneck": result.bottleneck.name if result.bottleneck else None,
        "profile": result.profile,
        "samples": result.samples,
        "model": result.model,
        "hardware": result.hardware,
        "busiest": [{"name": n, "pid": pid, "cpu": cpu} for n, pid, cpu in result.busiest],
    }


@router.get("")
async def run_analysis(
    duration: float = Query(WINDOW_SECONDS, ge=2.0, le=120.0, description="seconds to sample"),
    interval: float = Query(1.0, ge=0.5, le=10.0, description="seconds between samples"),
) -> dict[str, Any]:
    """Sample for `duration` seconds and analyse what was seen (hone's model for this machine:
    with hardware counters where it counts them)."""
    if duration < 2 * interval:
        duration = 2 * interval
    result = await asyncio.to_thread(analyze, duration, interval)
    return analysis_dict(result)
