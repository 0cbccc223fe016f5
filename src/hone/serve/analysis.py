"""Workload analysis API: sample the machine for a while, name the workload class with its
confidence and the features behind it, the bottleneck in USE terms, and the profile mapped to
the class (applied, if the user wants, through the profiles API: a transaction)."""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, HTTPException, Query, Request

from hone.analyze.features import WINDOW_SECONDS
from hone.errors import HoneError

if TYPE_CHECKING:
    from hone.analyze import Analysis

router = APIRouter(prefix="/api/analysis", tags=["analysis"])
_RUNNING = asyncio.Lock()  # one analysis at a time: it samples the whole machine anyway


def _analyze(duration: float, interval: float, stop: threading.Event) -> Analysis:
    """The analysis, its module loaded on first use in this worker thread: the classifier's
    scikit-learn takes seconds to import, which held up the server's start."""
    from hone.analyze import analyze

    return analyze(duration, interval, stop=stop)


@router.get("")
async def run_analysis(
    request: Request,
    duration: float = Query(WINDOW_SECONDS, ge=2.0, le=120.0, description="seconds to sample"),
    interval: float = Query(1.0, ge=0.5, le=10.0, description="seconds between samples"),
) -> dict[str, Any]:
    """Sample for `duration` seconds and analyse what was seen (hone's model for this machine:
    with hardware counters where it counts them). One analysis at a time (429 while one runs),
    and it stops when its client goes away: each holds a worker thread for its whole window."""
    if duration < 2 * interval:
        duration = 2 * interval
    if _RUNNING.locked():
        raise HTTPException(429, "an analysis is running; ask again when it has ended")
    async with _RUNNING:
        stop = threading.Event()
        task = asyncio.ensure_future(asyncio.to_thread(_analyze, duration, interval, stop))
        while not task.done():
            await asyncio.wait({task}, timeout=0.5)
            if not task.done() and await request.is_disconnected():
                stop.set()
        try:
            result = task.result()
        except HoneError:
            if stop.is_set():
                raise HTTPException(499, "the client went away") from None
            raise
    return result.to_dict()
