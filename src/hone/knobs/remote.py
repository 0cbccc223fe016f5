"""A knob on one remote host: what the journal records for each host of a cluster project, so
that `hone restore` can put every host back with nothing but the journal (docs/cluster.md).
Not a kind a project names: a project puts a knob on a host group instead."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hone.errors import ActuationError
from hone.knobs.base import Actuator, actuator_from_spec, register


@register
@dataclass
class RemoteActuator(Actuator):
    #: The host's connection (hone.cluster.ssh.Host.spec: address, user, port, key files).
    host: dict[str, Any]
    #: The knob as it would be on the local machine (a sysctl, config, script or shell spec).
    knob: dict[str, Any]
    kind = "remote"

    def __post_init__(self) -> None:
        from hone.cluster.remote import remote_knob
        from hone.cluster.ssh import Host

        if self.knob.get("kind") == self.kind:
            raise ActuationError("a remote knob cannot hold another", key=self.kind)
        try:
            self._host = Host.from_spec(self.host)
        except TypeError as exc:
            raise ActuationError(f"bad host: {exc}", key=self.kind) from None
        self._inner = actuator_from_spec(self.knob)
        self._remote = remote_knob(self._inner)

    def get(self) -> str:
        from hone.cluster.remote import run_steps

        (step,) = run_steps(self._host, [self._remote.resource.read], stop_at_failure=False)
        if not step.ok:
            raise ActuationError(f"cannot read: {step.text}", key=self.describe())
        return self._remote.value(step.text)

    def set(self, value: str) -> None:
        from hone.cluster.remote import run_steps

        resource = self._remote.resource
        raw = self._raw() if resource.whole_file else ""
        write = resource.write_step(self._remote.edit(raw, value))
        (step,) = run_steps(self._host, [write], stop_at_failure=True)
        if not step.ok:
            raise ActuationError(f"cannot set {value!r}: {step.text}", key=self.describe())

    def _raw(self) -> str:
        from hone.cluster.remote import run_steps

        (step,) = run_steps(self._host, [self._remote.resource.read], stop_at_failure=False)
        if not step.ok:
            raise ActuationError(f"cannot read: {step.text}", key=self.describe())
        return step.text

    def normalise(self, text: str) -> str:
        return self._inner.normalise(text)

    def check_value(self, value: str) -> None:
        self._inner.check_value(value)

    def setting(self) -> str:
        inner = self._inner.setting() or self._inner.describe()
        return f"{self._host.target()}/{inner}"

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "host": dict(self.host), "knob": dict(self.knob)}

    def describe(self) -> str:
        return f"{self._inner.describe()} on {self._host.name}"
