"""The machine: what it has, and its live metrics (`hone.collect`) as snapshots and a stream."""

from __future__ import annotations

import asyncio
import math
import os
import platform
from collections.abc import AsyncIterator
from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse

from hone.collect import Collector, Snapshot

router = APIRouter(prefix="/api/machine", tags=["machine"])

Interval = Query(1.0, ge=0.2, le=10.0, description="seconds between samples")
#: Seconds the first snapshot of a stream covers at most.
FIRST_SAMPLE = 0.25


def gauges(metrics: dict[str, float]) -> dict[str, float | None]:
    """CPU, memory, disk and network utilisation in percent (None where not measured)."""
    total = metrics.get("MEM.MEMINFO.MemTotal")
    available = metrics.get("MEM.MEMINFO.MemAvailable")
    memory = None
    if total and available is not None:
        memory = (total - available) / total * 100.0
    return {
        "cpu": metrics.get("CPU.STAT.util"),
        "memory": memory,
        "disk": metrics.get("STORAGE.STAT.util"),
        "network": metrics.get("NET.STAT.ifutil"),
    }


def snapshot_dict(snapshot: Snapshot) -> dict[str, Any]:
    metrics = {k: v for k, v in snapshot.metrics.items() if math.isfinite(v)}
    return {
        "time": snapshot.time,
        "interval": snapshot.interval,
        "disk": snapshot.disk,
        "network": snapshot.network,
        "gauges": gauges(metrics),
        "metrics": metrics,
        "processes": [asdict(p) for p in snapshot.processes],
    }


@router.get("")
def machine_info() -> dict[str, Any]:
    """What the machine is and what hone can measure on it."""
    with Collector(processes=False) as collector:
        unavailable = collector.unavailable
        disk, network = collector.disk, collector.network
    uname = platform.uname()
    return {
        "hostname": uname.node,
        "kernel": uname.release,
        "machine": uname.machine,
        "cores": os.cpu_count(),
        "disk": disk,
        "network": network,
        "unavailable": list(unavailable),
    }


@router.get("/sample")
def machine_sample(interval: float = Interval) -> dict[str, Any]:
    """One snapshot of every metric over `interval` seconds."""
    with Collector(top=5) as collector:
        return snapshot_dict(collector.sample(interval))


@router.get("/stream")
async def machine_stream(request: Request, interval: float = Interval) -> StreamingResponse:
    """Server-sent `sample` events, one snapshot every `interval` seconds, while connected;
    the first over at most FIRST_SAMPLE seconds, so a page opened on the machine draws its
    gauges at once instead of after a whole interval."""

    async def stream() -> AsyncIterator[str]:
        import json

        collector = await asyncio.to_thread(Collector, top=5)
        try:
            await asyncio.to_thread(collector.prime)
            yield "retry: 2000\n\n"
            window = min(interval, FIRST_SAMPLE)
            while not await request.is_disconnected():
                snapshot = await asyncio.to_thread(collector.sample, window)
                window = interval
                yield f"event: sample\ndata: {json.dumps(snapshot_dict(snapshot))}\n\n"
        finally:
            collector.close()

    return StreamingResponse(
        stream(), media_type="text/event-stream", headers={"Cache-Control": "no-store"}
    )
