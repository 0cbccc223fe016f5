"""The bridge between a cluster project and the trial loop: its knobs' cluster, its benchmark."""

from __future__ import annotations

import shlex

from hone import shell
from hone.cluster.fanout import Cluster, GroupKnob
from hone.cluster.ssh import Host, ssh_failed
from hone.errors import HoneError, HostUnreachable
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
    """Run the benchmark command on a host; its output comes back for the metrics. A host
    that cannot be reached stops the study (HostUnreachable: no configuration is to blame);
    a connection lost while the command ran fails the trial, said as such, not as the
    benchmark's exit code 255 with nothing to say why."""
    try:
        host.connect()
    except HoneError as exc:
        raise HostUnreachable(f"the benchmark's host cannot be reached: {exc}") from None
    mark = "@@hone-ended"
    script = (
        f"sh -c {shlex.quote(command)} </dev/null\nr=$?\n"
        f'printf \'\\n%s %s\\n\' {mark} "$r" >&2\nexit "$r"\n'
    )
    try:
        done = host.run(script, timeout=timeout)
    except HoneError:
        return shell.Result(command, -1, "", "", timeout, timed_out=True)
    errors, ended, _code = done.stderr.rpartition(f"\n{mark} ")
    if not ended:  # the command's shell never said it ended: ssh lost the host
        lost = ssh_failed(done) or f"ssh: exit {done.returncode}"
        said = f"{host.where()}: the connection was lost while the benchmark ran ({lost})"
        return shell.Result(command, done.returncode, done.stdout, said, 0.0)
    return shell.Result(command, done.returncode, done.stdout, errors, 0.0)
