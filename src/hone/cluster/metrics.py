"""Metrics read on the hosts of a cluster: a command run on a named host, or on every host of a
group with the values combined by a stated rule, after the benchmark (and before it too for a
`delta`: a counter such as a broker's CPU time in /proc, whose growth is what the benchmark
cost). Each host gets one ssh call per reading, all hosts at once; the commands are the
project's own text, run by the host's sh in its user's login directory."""

from __future__ import annotations

import re
import threading

import numpy as np

from hone.cluster.fanout import parallel
from hone.cluster.remote import run_steps
from hone.cluster.ssh import Host, SshFailed
from hone.errors import BenchmarkError, HoneError, HostUnreachable
from hone.project.model import Metric, Project
from hone.tune.metrics import parse_number

Readings = dict[str, dict[str, float]]  # metric -> host -> value

_COMBINE = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}


class HostMetrics:
    """The project's metrics read on hosts, and where each is read."""

    def __init__(self, project: Project) -> None:
        self.metrics = [m for m in project.metrics if m.remote]
        self.hosts = project.hosts
        self.on: dict[str, list[str]] = {
            m.name: [m.host] if m.host is not None else list(project.groups[m.group or ""])
            for m in self.metrics
        }

    def __bool__(self) -> bool:
        return bool(self.metrics)

    def before(self) -> Readings:
        """The counters of the `delta` metrics, read before the benchmark."""
        return self._read([m for m in self.metrics if m.delta])

    def after(self, before: Readings) -> dict[str, float]:
        """Every host metric's value once the benchmark is done (a delta: its growth)."""
        after = self._read(self.metrics)
        values = {}
        for metric in self.metrics:
            per_host = after[metric.name]
            if metric.delta:
                per_host = {h: v - before[metric.name][h] for h, v in per_host.items()}
            if metric.host is not None:
                values[metric.name] = per_host[metric.host]
            else:
                combine = _COMBINE[metric.aggregate or "sum"]
                values[metric.name] = float(combine([per_host[h] for h in self.on[metric.name]]))
        return values

    def _read(self, metrics: list[Metric]) -> Readings:
        wanted: dict[str, list[Metric]] = {}
        for metric in metrics:
            for host in self.on[metric.name]:
                wanted.setdefault(host, []).append(metric)
        readings: Readings = {m.name: {} for m in metrics}
        lock = threading.Lock()

        unreachable: dict[str, str] = {}

        def one(name: str) -> None:
            try:
                values = _read_host(self.hosts[name], wanted[name])
            except SshFailed as exc:
                unreachable[name] = str(exc)
                raise
            with lock:
                for metric, value in zip(wanted[name], values, strict=True):
                    readings[metric.name][name] = value

        failures = parallel(one, sorted(wanted))
        if unreachable:  # no configuration is to blame: the study stops
            host = sorted(unreachable)[0]
            raise HostUnreachable(f"metrics not read: {unreachable[host]}")
        if failures:
            host = sorted(failures)[0]
            raise BenchmarkError(f"host {host}: {failures[host]}")
        return readings


def _read_host(host: Host, metrics: list[Metric]) -> list[float]:
    """One ssh call for every metric read on this host."""
    try:
        steps = run_steps(host, [m.command or "" for m in metrics], stop_at_failure=False)
    except SshFailed:
        raise
    except HoneError as exc:
        raise HoneError(f"metrics not read: {exc}") from None
    values = []
    for metric, step in zip(metrics, steps, strict=True):
        if not step.ok:
            raise HoneError(f"metric {metric.name}: command failed: {step.text}")
        values.append(_value(metric, step.text))
    return values


def _value(metric: Metric, output: str) -> float:
    what = f"metric {metric.name}"
    if metric.pattern is None:
        return parse_number(output, what)
    found = list(re.finditer(metric.pattern, output, re.MULTILINE))
    if not found:
        raise HoneError(f"{what}: pattern {metric.pattern!r} not found in the command's output")
    return parse_number(found[-1].group(1), what)
