"""Peers whose libraries cannot share hone's environment (OpenBox pins scikit-learn < 1.4 and
NumPy 1.26, HEBO NumPy < 1.25): each runs in an environment of its own, named by an environment
variable, as a worker process the harness speaks to in JSON lines. The worker scripts are in
`benchmarks/tuners/workers/`; set up an environment with

    python3 -m venv /somewhere/openbox && /somewhere/openbox/bin/pip install openbox
    export HONE_PEER_OPENBOX=/somewhere/openbox/bin/python

The space goes to the worker as knobs of three kinds: `cat` (choices as strings), `index` (a
listed value's position: order kept) and `float` (low, high, log). Peers deploy their best
single reading, as the libraries report it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from hone.optimizers import Observation
from hone.space import Boolean, Categorical, Config, SearchSpace

WORKERS = Path(__file__).resolve().parent / "workers"
PEERS = {"openbox": "HONE_PEER_OPENBOX", "hebo": "HONE_PEER_HEBO"}  # peer: its interpreter


def missing(tuner: str) -> str | None:
    """Why an out-of-process peer cannot run here, or None."""
    variable = PEERS.get(tuner)
    if variable is None:
        return None
    python = os.environ.get(variable)
    if not python or not Path(python).exists():
        return (
            f"{tuner} runs in an environment of its own: set {variable} to a Python with "
            f"{tuner} installed (benchmarks/tuners/process_peer.py)"
        )
    return None


class ProcessPeer:
    def __init__(self, tuner: str, space: SearchSpace, seed: int, budget: int) -> None:
        self.space = space
        self.history: list[Observation] = []
        knobs = []
        for name, domain in space:
            listed = domain.values()
            if isinstance(domain, Categorical | Boolean):
                knobs.append({"name": name, "kind": "cat", "choices": [str(v) for v in listed]})
            elif listed is not None:
                knobs.append({"name": name, "kind": "index", "size": len(listed)})
            else:
                knobs.append(
                    {
                        "name": name,
                        "kind": "float",
                        "low": domain.low,
                        "high": domain.high,
                        "log": bool(getattr(domain, "log", False)),
                    }
                )
        self.worker = subprocess.Popen(
            [os.environ[PEERS[tuner]], str(WORKERS / f"{tuner}_worker.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._call({"knobs": knobs, "seed": seed, "budget": budget})

    def _call(self, message: dict) -> dict:
        assert self.worker.stdin and self.worker.stdout
        self.worker.stdin.write(json.dumps(message) + "\n")
        self.worker.stdin.flush()
        line = self.worker.stdout.readline()
        if not line:
            raise RuntimeError(f"peer worker ended (exit {self.worker.wait()})")
        return json.loads(line)

    def _to_worker(self, config: Config) -> dict:
        out = {}
        for name, domain in self.space:
            value = config[name]
            if isinstance(domain, Categorical | Boolean):
                out[name] = str(value)
            elif domain.values() is not None:
                out[name] = domain.values().index(value)
            else:
                out[name] = float(value)
        return out

    def _from_worker(self, values: dict) -> Config:
        config = {}
        for name, domain in self.space:
            value = values[name]
            if isinstance(domain, Categorical | Boolean):
                config[name] = {str(v): v for v in domain.values()}[value]
            elif domain.values() is not None:
                config[name] = domain.values()[int(value)]
            else:
                config[name] = float(value)
        return config

    def ask(self) -> Config:
        return self._from_worker(self._call({"ask": True})["config"])

    def tell(self, config: Config, value: float | None) -> None:
        self.history.append(Observation(config, value))
        self._call({"tell": self._to_worker(config), "value": value})

    def recommend(self) -> Config | None:
        done = [o for o in self.history if o.value is not None]
        return min(done, key=lambda o: o.value).config if done else None

    def __del__(self) -> None:
        worker = getattr(self, "worker", None)
        if worker and worker.poll() is None:
            worker.kill()
            worker.wait()
