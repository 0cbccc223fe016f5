"""HEBO (Cowen-Rivers et al., JAIR 2022; NeurIPS 2020 black-box optimisation challenge) as a
peer, in HEBO's own environment (it pins NumPy < 1.25): `HEBO(space)` with its defaults (input
and output warping, an acquisition ensemble solved by NSGA-II), over JSON lines on stdin /
stdout (benchmarks/tuners/process_peer.py). HEBO has no failure state: a failed trial is
observed as the worst value seen."""

import json
import sys


def main():
    out = sys.stdout  # the protocol's; libraries that print go to stderr
    sys.stdout = sys.stderr
    import numpy as np
    import pandas as pd
    import torch
    from hebo.design_space.design_space import DesignSpace
    from hebo.optimizers.hebo import HEBO

    setup = json.loads(sys.stdin.readline())
    params = []
    for knob in setup["knobs"]:
        if knob["kind"] == "cat":
            params.append({"name": knob["name"], "type": "cat", "categories": knob["choices"]})
        elif knob["kind"] == "index":
            params.append({"name": knob["name"], "type": "int", "lb": 0, "ub": knob["size"] - 1})
        else:
            kind = "pow" if knob["log"] else "num"
            params.append(
                {"name": knob["name"], "type": kind, "lb": knob["low"], "ub": knob["high"]}
            )
    np.random.seed(setup["seed"])
    torch.manual_seed(setup["seed"])
    hebo = HEBO(DesignSpace().parse(params), scramble_seed=setup["seed"])
    names = [knob["name"] for knob in setup["knobs"]]
    seen = []
    print(json.dumps({"ready": True}), file=out, flush=True)
    for line in sys.stdin:
        message = json.loads(line)
        if "ask" in message:
            row = hebo.suggest(n_suggestions=1).iloc[0]
            values = {n: row[n].item() if hasattr(row[n], "item") else row[n] for n in names}
            print(json.dumps({"config": values}), file=out, flush=True)
            continue
        value = message["value"]
        if value is not None:
            seen.append(value)
        observed = value if value is not None else (max(seen) if seen else 0.0)
        frame = pd.DataFrame({n: [message["tell"][n]] for n in names})
        hebo.observe(frame, np.array([[observed]]))
        print(json.dumps({"ok": True}), file=out, flush=True)


if __name__ == "__main__":
    main()
