"""The bridge between a cluster project and the trial loop: its knobs' cluster, its benchmark."""

from __future__ import annotations

import shlex

from hone import shell
from hone.cluster.fanout import Cluster, GroupKnob
from hone.cluster.ssh import Host
from hone.errors import HoneError
from hone.project.model import Project


def cluster_of(project: Project) -> Cluster | None:
    """The cluster of the project's knobs on host groups; None when every knob is local."""
    knobs = [
        GroupKnob(
            k.name,
            k.actuator,
            [project.hosts[h] for h in project.groups[k.group]],
            k.group,
            k.restart,
        )
        for k in project.knobs
        if k.group is not None
    ]
    if not knobs:
        return None
    used = {project.benchmark.host} if project.benchmark.host else set()
    for metric in project.metrics:
        if metric.host is not None:
            used.add(metric.host)
        elif metric.group is not None:
            used.update(project.groups[metric.group])
    others = [project.hosts[name] for name in sorted(used)]
    return Cluster(project.name, knobs, project.group_workloads, others)


def remote_benchmark(host: Host, command: str, timeout: float) -> shell.Result:
    """Run the benchmark command on a host; its output comes back for the metrics. ssh's own
    failures (no connection) are said as such, not as the benchmark's exit code."""
    try:
        host.connect()
    except HoneError as exc:
        return shell.Result(command, 255, "", str(exc), 0.0)
    script = f"exec sh -c {shlex.quote(command)} </dev/null\n"
    try:
        done = host.run(script, timeout=timeout)
    except HoneError:
        return shell.Result(command, -1, "", "", timeout, timed_out=True)
    return shell.Result(command, done.returncode, done.stdout, done.stderr, 0.0)
