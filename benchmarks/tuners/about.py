"""The fixed part of docs/tuners.md: how the harness scores and what each task is."""

ABOUT = """\
## How tuners are scored
Every tuner first gets the default configuration measured three times (as `hone tune` measures
its baseline), then one evaluation at a time up to the budget. After each evaluation the
configuration the tuner would deploy is scored by its noise-free truth: hone's optimisers by
`recommend()`, Optuna, random, hone's A-Tune-style engines and scikit-optimize by their best
single reading (Optuna's `best_trial`, skopt's best observed, as A-Tune deploys), SMAC3 by its
intensifier's incumbent. A deployed configuration in a failure region scores as the worst.
- *evals to x %*: median over seeds of the first evaluation from which the deployed
  configuration's truth STAYS within x % of the optimum up to the budget (`-`: the median seed
  is not within x % at the end). That is what a user pays: stop at any later evaluation and the
  configuration is that good. Tuners that deploy their luckiest single reading often touch x %
  by chance and leave it again; *first at 2 %*, the first evaluation at which the deployed
  configuration is within 2 % at all, shows that; *measured 2 %*, the first evaluation after
  which the tuner has measured a configuration within 2 % (deployed or not), is its search
  alone: the gap to "to 2 %" is what its decisions under noise cost.
- *regret@b*: median normalised regret after b evaluations, (deployed - optimum) / (default -
  optimum), clipped to [0, 1] (if the default is the optimum: relative to the worst).
- *AUC*: mean of the normalised regret curve (lower is better); *final gap*: median relative gap
  of the last recommendation; *ms per ask*: median optimiser time per suggestion (ask + tell).
- *vs auto*: paired Wilcoxon signed-rank test of the final regrets over seeds (same seeds, same
  measurement draws), Holm-corrected per task. *Average rank*: rank of each tuner's median regret
  per task, averaged over tasks, with Friedman's test across tasks.
- *The 2 % ratio*: per task, (median evaluations for auto to stay within 2 %) / (the same for
  the best peer on that task), and its median over tasks. A task no tuner gets to within the
  budget says nothing and is left out (the report says how many); a task only auto gets to
  counts as auto / (budget + 1), as if the best peer got there one evaluation after the budget;
  a task only a peer gets to counts as infinite. The same ratio with the first-hit definition,
  and for search alone (*measured 2 %*), are printed below it.
- The default suite (`python -m benchmarks.tuners`): every task below, 5 seeds, budget 50,
  every tuner on every seed (scikit-optimize too: it costs about 20 CPU s per run at budget 50,
  its GP refitting its kernel and optimising its acquisition on every tell; a single lucky seed
  would win tasks by chance). Each run (task, tuner, seed) is one job in a pool of two
  processes, the longest (scikit-optimize, then SMAC, then auto) started first so both finish
  together; the report gives the run's wall time, the CPU time of all runs per tuner (what the
  wall time would be on an idle machine: CPU time / 2) and the mean load average during the
  run, since other work shares the 2 cores. `--quick`: 2 COCO problems, the 8-knob synthetic
  task and the tables, budget 30, without scikit-optimize. Every job runs with one BLAS thread
  (more only contend on 2 shared cores, for every tuner alike).
- *Default*: the default configuration's gap to the optimum. Every default-suite task's
  default is more than 10 % from its optimum (a test checks it): a task that starts within
  reach of the optimum says nothing about search.

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
  evaluations (the noise is log-normal: its median is the noise-free value); COCO draws that
  noise from process-wide counters, so each measurement first sets them from the run's seeded
  generator (a rerun is the same run; before, it depended on which runs its worker had done
  before, and f122's median evaluations to 2 % moved from 39.5 to `-` between reruns of one
  code). Gaps are relative to
  the grid's median truth above the optimum (f's offset is arbitrary).
  The default is the grid point 1/3 along every axis, or, if that is within 10 % of the
  optimum, the point 2/3 along every axis (one fixed rule for every problem; f104's point at
  1/3 is 0.7 % from the optimum, so its default is the point at 2/3, 32 % away).
- **Real measurements** (`benchmarks/tuners/tasks/`, format of `shared/spec/tabular-tasks.md`;
  any task in that format runs with `--task PATH`). Measured on this 2-core machine, which other
  work shared (the noise is real; every row records the 1-minute load average); each repetition
  walks the whole grid in a new random order, so repeats of a configuration are minutes apart:
  - `gcc-flags`: run time (s, minimise) of `examples/gcc-flags/workload.c` built by gcc 12 with
    `-O1/-O2/-O3/-Os`, `-march` x86-64 / v2 / v3, `-funroll-loops`, `-flto`, two-phase PGO;
    96 configurations x 3 rows (`python -m benchmarks.tuners.measure.gcc_flags`).
  - `nginx`: requests/s (maximise) of nginx 1.22 serving a 4 KiB page to `wrk -t2 -c64 -d3s`;
    worker_processes, worker_connections, keepalive_requests, sendfile; nginx restarted for
    every row; 54 configurations x 5 rows (`python -m benchmarks.tuners.measure.nginx --reps
    5`; load average 2.8-4.2 while it ran). The table before session 6 had measured nginx's
    403 page: its temporary prefix was private to root and nginx's workers run as nobody; the
    script now makes the prefix readable and refuses a run with error responses.
  - `memcached`: TPS (maximise) of memcached 1.6 under `memcaslap -T 2 -c 32 -t 2s`; threads,
    requests per event (-R), CAS on/off (-C), max connections (-c 16 starves the 32 client
    connections: memcaslap hangs past its timeout, a failed row, or crawls: 12 configurations
    are failure regions); restarted by SIGKILL for every row; 48 configurations x 5 rows
    (`python -m benchmarks.tuners.measure.memcached --reps 5`; load average 0.8-3.2).
  Each table's section gives its noise (the spread of one configuration's rows) and how close
  its best configurations are. On nginx and memcached (rows spread by 8-9 %) the truth of a
  configuration, a mean of 5 rows, is known to about 4 %, and 2-4 configurations are within 2 %
  of the optimum with the next at 2.3 %: which of them a tuner deploys is partly chance, and
  telling 2 % from 2.3 % apart would take hundreds of readings. Until session 5 these tables
  had 3 rows spread by 25 % and 37 % (measured under heavier load, nginx's of its error page),
  and "evals to 2 %" on them measured luck. gcc-flags (1 % spread) resolves 2 % with a few
  readings.
"""
