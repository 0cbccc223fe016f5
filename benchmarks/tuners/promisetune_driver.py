"""Runs PromiseTune itself, from a fetched copy of its repository, on one table and one seed,
and prints every value it measured as JSON. This file runs under PromiseTune's own Python
environment (its requirements: causal-learn, lingam, ...), not hone's; nothing of PromiseTune
is copied here, its module is imported from the copy.

    python promisetune_driver.py CODE_DIR TABLE.csv SEED

CODE_DIR is the copy's `Code` folder; TABLE is in PromiseTune's format (the objective column's
name starts with `$<`, minimised: a maximised objective is negated before it gets here)."""

from __future__ import annotations

import json
import os
import sys


def main() -> None:
    code, table, seed = sys.argv[1], os.path.abspath(sys.argv[2]), int(sys.argv[3])
    sys.path.insert(0, code)
    os.chdir(code)
    import logging

    logging.disable(logging.CRITICAL)
    import PromiseTune as promisetune

    measured: list[float] = []
    lookup = promisetune.get_objective.get_objective

    def recorded(table_dict, solution):
        value, configuration = lookup(table_dict, solution)
        measured.append(float(value))
        return value, configuration

    promisetune.get_objective.get_objective = recorded
    out = sys.stdout
    sys.stdout = sys.stderr  # its progress lines
    promisetune.PromiseTune(table, promisetune.PromiseTuneConfig(), seed)
    out.write(json.dumps(measured) + "\n")


if __name__ == "__main__":
    main()
