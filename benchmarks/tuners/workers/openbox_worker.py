"""OpenBox (Li et al., KDD 2021) as a peer, in OpenBox's own environment: its `Advisor` with
the settings its documentation recommends for a single objective (surrogate, acquisition and
its optimiser chosen by OpenBox from the space: `auto`), over JSON lines on stdin / stdout
(benchmarks/tuners/process_peer.py). Failed trials are told with OpenBox's FAILED state."""

import json
import sys
import tempfile


def space(knobs):
    from openbox import space as sp

    params = []
    for knob in knobs:
        if knob["kind"] == "cat":
            params.append(sp.Categorical(knob["name"], knob["choices"]))
        elif knob["kind"] == "index":
            params.append(sp.Int(knob["name"], 0, knob["size"] - 1))
        else:
            params.append(sp.Real(knob["name"], knob["low"], knob["high"], log=knob["log"]))
    space = sp.Space()
    space.add_variables(params)
    return space


def main():
    out = sys.stdout  # the protocol's; libraries that print go to stderr
    sys.stdout = sys.stderr
    from ConfigSpace import Configuration
    from openbox import Advisor, Observation
    from openbox.utils.constants import FAILED, SUCCESS

    setup = json.loads(sys.stdin.readline())
    config_space = space(setup["knobs"])
    advisor = Advisor(
        config_space,
        num_objectives=1,
        task_id="hone-peer",
        random_state=setup["seed"],
        output_dir=tempfile.mkdtemp(),
        logger_kwargs={"level": "ERROR"},
    )
    pending = {}
    print(json.dumps({"ready": True}), file=out, flush=True)
    for line in sys.stdin:
        message = json.loads(line)
        if "ask" in message:
            config = advisor.get_suggestion()
            values = config.get_dictionary()
            pending[json.dumps(values, sort_keys=True)] = config
            print(json.dumps({"config": values}), file=out, flush=True)
            continue
        values = message["tell"]
        config = pending.pop(json.dumps(values, sort_keys=True), None)
        if config is None:
            config = Configuration(config_space, values=values)
        value = message["value"]
        state = SUCCESS if value is not None else FAILED
        objective = value if value is not None else float("inf")
        advisor.update_observation(Observation(config, [objective], trial_state=state))
        print(json.dumps({"ok": True}), file=out, flush=True)


if __name__ == "__main__":
    main()
