"""The fixed part of docs/tuners.md: how the harness scores and what each task is."""

ABOUT = """\
## How tuners are scored
Every tuner first gets the default configuration measured three times (as `hone tune` measures
its baseline), then one evaluation at a time up to the budget. After each evaluation the
configuration the tuner would deploy is scored by its noise-free truth: hone's optimisers by
`recommend()`, Optuna, random, hone's A-Tune-style engines and scikit-optimize by their best
single reading (Optuna's `best_trial`, skopt's best observed, as A-Tune deploys), SMAC3 by its
intensifier's incumbent. A deployed configuration in a failure region scores as the worst.
- *evals to x %*: median over seeds of the evaluations until the deployed configuration's truth
  is within x % of the optimum (`-`: the median seed never got there).
- *regret@b*: median normalised regret after b evaluations, (deployed - optimum) / (default -
  optimum), clipped to [0, 1] (if the default is the optimum: relative to the worst).
- *AUC*: mean of the normalised regret curve (lower is better); *final gap*: median relative gap
  of the last recommendation; *ms per ask*: median optimiser time per suggestion (ask + tell).
- *vs auto*: paired Wilcoxon signed-rank test of the final regrets over seeds (same seeds, same
  measurement draws), Holm-corrected per task. *Average rank*: rank of each tuner's median regret
  per task, averaged over tasks, with Friedman's test across tasks.
- The default suite (`python -m benchmarks.tuners`): every task below, 5 seeds, budget 50, every
  peer; scikit-optimize (0.4 s per suggestion at 50 trials: its GP refits on every tell and
  scores 10,000 points) on the first seed only (`--slow-seeds`), so its Wilcoxon p-values are
  1 by construction and its regrets are one seed's. `--quick`: 2 COCO problems, the 8-knob
  synthetic task and the tables, budget 30, without scikit-optimize. Every job runs with one
  BLAS thread (more only contend on 2 shared cores, for every tuner alike).

## Tasks
- **Synthetic** (`benchmarks/tuners/tasks.py`): server-like response surfaces with a known
  optimum (dense sampling plus coordinate polishing when the task is built). Knobs cycle through
  integer thread counts (1-32), ordered discrete buffer sizes (4 ... 1024, powers of two), 4-way
  categorical modes, booleans and log-scale float timeouts (0.01-100); about 40 % of the knobs do
  nothing; each useful knob has a bell-shaped optimum at its own position; two knobs interact; a
  cliff (the most threads with the biggest buffers) makes the "server" fail (a failed trial, no
  value); multiplicative Gaussian noise. Default suite: 8 knobs at 3 % CV, 16 at 6 %, 4 at 10 %,
  30 at 5 % (`--quick`: the first only).
- **COCO** (`benchmarks/tuners/coco.py`, PyPI `coco-experiment`): `bbob-mixint` f1 (sphere),
  f10 (ellipsoid), f21 (Gallagher) in 5-D and `bbob-noisy` f101 (sphere), f104 (Rosenbrock),
  f122 (Schaffer F7), all with Gaussian noise, in 2-D, instance 1 (`--quick`: mixint f1 and
  noisy f101). Each variable becomes an ordered knob of 7 evenly spaced values (integer
  variables: their integers, thinned) so every grid point's truth is known: mixint's f(x) plus 3 %
  multiplicative noise above the grid's best; noisy's own noise, truth = median of 31
  evaluations (the noise is log-normal: its median is the noise-free value). Gaps are relative to
  the grid's median truth above the optimum (f's offset is arbitrary).
- **Real measurements** (`benchmarks/tuners/tasks/`, format of `shared/spec/tabular-tasks.md`;
  any task in that format runs with `--task PATH`). Measured on this 2-core machine while other
  helpers ran tests (the noise is real; every row records the 1-minute load average); each
  repetition walks the whole grid in a new random order, so repeats of a configuration are
  minutes apart:
  - `gcc-flags`: run time (s, minimise) of `examples/gcc-flags/workload.c` built by gcc 12 with
    `-O1/-O2/-O3/-Os`, `-march` x86-64 / v2 / v3, `-funroll-loops`, `-flto`, two-phase PGO;
    96 configurations x 3 rows (`python -m benchmarks.tuners.measure.gcc_flags`).
  - `nginx`: requests/s (maximise) of nginx 1.22 serving a 4 KiB page to `wrk -t2 -c64 -d3s`;
    worker_processes, worker_connections, keepalive_requests, sendfile; nginx restarted for
    every row; 54 configurations x 3 rows (`python -m benchmarks.tuners.measure.nginx`).
  - `memcached`: TPS (maximise) of memcached 1.6 under `memcaslap -T 2 -c 32 -t 2s`; threads,
    requests per event (-R), CAS on/off (-C), max connections (-c 16 starves the 32 client
    connections: memcaslap hangs past its timeout, a failed row, or crawls: 12 configurations
    are failure regions); restarted by SIGKILL for every row; 48 configurations x 3 rows
    (`python -m benchmarks.tuners.measure.memcached`).
"""
