"""The fixed part of docs/tuners.md: how the harness scores and what each task is."""

ABOUT = """\
## How tuners are scored
Every tuner first gets the default configuration measured three times (as `hone tune` measures
its baseline), then one evaluation at a time up to the budget. After each evaluation the
configuration the tuner would deploy is scored by its noise-free truth: hone's optimisers by
`recommend()`, Optuna, random, hone's A-Tune-style engines and scikit-optimize by their best
single reading (Optuna's `best_trial`, skopt's best observed, as A-Tune deploys), SMAC3 by its
intensifier's incumbent. A deployed configuration in a failure region scores as the worst;
a tuner with no successful reading yet deploys nothing, and the default is scored.
- *evals to x %*: median over seeds of the first evaluation from which the deployed
  configuration's truth STAYS within x % of the optimum up to the budget (`-`: the median seed
  is not within x % at the end). That is what a user pays: stop at any later evaluation and the
  configuration is that good. Tuners that deploy their luckiest single reading often touch x %
  by chance and leave it again; *first at 2 %*, the first evaluation at which the deployed
  configuration is within 2 % at all, shows that; *measured 2 %*, the first evaluation after
  which the tuner has measured a configuration within 2 % (deployed or not), is its search
  alone: the gap to "to 2 %" is what its decisions under noise cost. A gap is a share of
  |optimum|; where the optimum is 0 or the truths cross 0 (a count of errors, a difference),
  whose 0 says nothing of size, a share of the median truth's distance from the optimum.
- *regret@b*: median normalised regret after b evaluations, (deployed - optimum) / (default -
  optimum), clipped to [0, 1] (if the default is the optimum: relative to the worst).
- *AUC*: mean of the normalised regret curve (lower is better); *final gap*: median relative gap
  of the last recommendation (`failure region` where the median seed's is one: "inf %");
  *ms per ask*: median optimiser time per suggestion (ask + tell).
- *vs auto*: paired Wilcoxon signed-rank test of the final regrets over seeds (same seeds, same
  measurement draws), Holm-corrected per task. *Average rank*: rank of each tuner's median regret
  per task, averaged over tasks, with Friedman's test across tasks.
- *Average rank* and *auto against each peer* are given for the validation tasks, the
  development tasks and the whole suite, at budgets 10, 20, 50 and 100. Against each peer
  alone: per task, (median evaluations for auto to stay within 5 % of the optimum) / (the same
  for the peer), its median over the tasks either gets to, and the number of tasks where auto
  is slower (ratio > 1); the same within 2 % beside it. A task neither gets to is left out; one
  only auto gets to counts as auto / (budget + 1); one only the peer gets to as infinite. Last,
  the same ratio within 5 % for the best of the other tuners (auto among them) on each task: a
  yardstick no single tuner is, for how far below 1 a ratio against that peer can go here.
- The default suite (`python -m benchmarks.tuners`; its time on this machine is below): budget 100,
  1 seed, 29 tasks: 6 of the 13 earlier tasks (the 8-knob synthetic task, COCO mixint f1 and noisy
  f101, the three measured tables), the two tables measured since (`redis-7`, `postgresql-15`), the
  held-out `haproxy` grid and one pool table per system (its PromiseTune table if it has one, else
  its first by name), each at one noise level by rotation over the tables in name order (noise-free,
  3 %, 10 %); 13 of the 29 are validation tasks. Across 29 tasks one seed each says more than five
  seeds of a few tasks, and scikit-optimize's GP (A-Tune's default engine) costs 45-165 CPU s per
  run at budget 100 (it refits its kernel and optimises its acquisition on every tell): it alone
  takes 84 % of the suite's 55 CPU minutes, so A-Tune's GBRT (80 s per run) runs only with
  `--tuners`. Each run (task, tuner, seed) is one job in a pool of two processes, the most expensive
  first (`COST` in `__main__.py`, which also prints an estimate before a run); the report gives the
  run's wall time, the CPU time per tuner and the mean load average, since other work shares the 2
  cores. Each job process may use its share of the memory (0.8 x RAM / jobs): a run that needs more
  fails alone, is named on stderr and in the report's header, and is scored as a crashed tuner (the
  default configuration throughout), as is a run whose tuner raises (none of the suite's: SMAC3's
  log-scaled forest raises on raw readings in the millions, so it is told each reading relative to
  the default's first). scikit-optimize's GP, set up as A-Tune sets it (every numeric knob a
  category), needs that rule: on PromiseTune's redis and x264 tables, whose knobs take up to 2,234
  values, its processes grew past 16 and 24 GB until the system killed them. Measured here with that
  rule, the default suite's 29 tasks took 30 minutes of wall time and 55 CPU minutes (mean load
  2.1), two runs of it stopped at the cap. `--full`: all 13 earlier tasks, the two measured
  since, `haproxy` and every pool table at all three noise levels (145 tasks: for a many-seed run on
  a bigger machine). `--set development|validation`: one side of the split; `--set holdout`: the
  eight held-out systems (`benchmarks/tuners/holdout/`) at all three noise levels. `--quick` (under
  5 minutes): budget 30, the 6 earlier tasks, the two measured since, `haproxy` and two pool systems
  of each side (13 tasks), without the expensive peers (COST of 50 CPU s per run or more). Every job
  runs with one BLAS thread (more only contend on 2 shared cores, for every tuner alike).
- *Default*: the default configuration's gap to the optimum. The default of each of the 13
  earlier tasks, of the two measured since and of `haproxy` is more than 10 % from its optimum
  (a test checks it; `redis-7`'s 18.6 % is largely noise, see its bullet below): a task that
  starts within reach of the optimum says nothing about search. A pool table has no default
  row: its default is its median configuration (half the table is better), which can sit near
  the optimum on flat tables (PostgreSQL's is 1 % away); regret is still relative to it.

## The split: development and validation tasks
`benchmarks/tuners/split.yaml`, drawn by `python -m benchmarks.tuners.split` (seed 20) before
any change to `auto` was judged on the pool tables: the tables' systems, in sorted order,
shuffled by NumPy's `default_rng(20)`, join validation in that order until validation holds at
least a third of the suite's tasks and of its table systems (a test checks the file is that
draw, that no system is on both sides and that the third holds). A system's tables from both
sources and their noise variants stay on one side (x264 with X264 and SS-U, storm with every
Storm table, LLVM with SS-L and SS-W, HSQLDB with SS-M, exastencils with SS-X). The 13 earlier
tasks were tuned on: they are development. A table measured here of a pool system goes with that
system, after the draw (`MEASURED` in `split.py`): `redis-7` and `postgresql-15` are validation
tasks. Every change to a tuner is judged on the development tasks; validation tasks are only for
reporting, so a change fitted to the development tasks shows as a gap between the two. Today: 11
validation systems (7z, apache, bdbc, deeparch, hsqldb, llvm, lrzip, postgresql, redis, ss-b,
storm: 30 tables, 90 tasks, and the 2 measured here) and 9 development systems with tables (13
tables, 39 tasks) plus the 13 earlier tasks.

## Pool tasks: the field's own benchmarks
Software-configuration tuning research measures tuners on public tables of real systems; the
suite takes 43 of them (`benchmarks/tuners/pools/`, README there: sources, citations, the
rules for objectives, knobs and duplicates, and every table's system and side): PromiseTune's
systems (ICSE 2026; 11 of its 12: javagc's table is absent from the stored copies) and the
FLASH-era tables of `timm/moot` (SS-A ... SS-X, Apache, SQLite, x264, HSMGP, Storm's wc/rs/sol).
Each table's objective is its first objective column in its source's declared direction
(PromiseTune's redis and storm throughput maximised, as its own results files show). The tables
are samples, not full grids, so a task's candidates are its rows (`benchmarks/tuners/pool.py`):
- `space.candidates` holds the rows: a tuner that can choose from a finite pool proposes rows
  directly: FLASH and PromiseTune (pool-native), and auto, which scores its usual candidates
  plus the pool's rows nearest its best configurations and some at random, and runs the best
  as the nearest row it has not measured (so it never spends an evaluation on a row the system
  would run in place of another, and its model learns each reading where it was taken);
- every other proposal is resolved to a row by ONE rule for all tuners: the nearest row by the
  sum over knobs of |difference of unit positions| (a knob's value's rank among the table's
  values, scaled to [0, 1]), a categorical knob adding 1 on a mismatch; ties go to the row that
  comes first in the table. NumPy over the whole pool: about 4 ms for a proposal on the
  86,058 rows of exastencils, exact rows by a dictionary lookup;
- the tuner is told the resolved row's reading for its own proposal (it asked for x; the
  system could only run the nearest measured configuration); what it deploys is resolved by
  the same rule and scored by that row's value;
- the tables hold one reading per row (rows repeating a configuration are averaged): each
  table runs noise-free and with multiplicative noise of 3 % and 10 % CV (the truth times
  1 + cv N(0, 1), drawn from the run's seeded generator); gaps are relative to the optimum's
  size, as for the measured tables.
`--task path/to/TABLE.csv.gz` runs any table in either source's conventions (at the three
noise levels). `--protocol promisetune` runs PromiseTune's protocol on its systems (budget 100,
noise-free, no baseline, the best configuration found) beside its published per-system
results, into [tuners-promisetune.md](tuners-promisetune.md).

## Peers
Each as its authors set it up; `--tuners` names them (`python -m benchmarks.tuners --help`).
- `optuna-tpe`, `optuna-cmaes`: Optuna's TPE and CMA-ES samplers with their defaults.
- `smac-hpo`: SMAC3's hyperparameter-optimisation facade (random forest, log-EI, intensification),
  non-deterministic scenario, each reading told relative to the default's first (costs about 1,
  as its examples' error rates: its log scaling keeps the lowest cost off log(0) by an absolute
  1e-10, lost in readings in the millions); it deploys its intensifier's incumbent.
- `skopt-gp-atune`, `skopt-gbrt-atune`: scikit-optimize set up as A-Tune sets it up (A-Tune's
  default engine and its GBRT); `lhs-atune`, `abtest-atune`: A-Tune's other engines in hone.
- `flash`: FLASH (Nair et al., TSE 2018) written from the paper (`flash_peer.py`): 30 random
  configurations of the pool, then a CART tree on everything measured picks the unmeasured
  configuration with the best prediction; off pool tasks its pool is 10,000 random
  configurations of the space.
- `optuna-gp`: Optuna's GPSampler with its defaults; needs torch, from the `peers-torch` extra
  that `make test` leaves out (skipped, saying so, when torch is absent).
- `openbox`, `hebo`: OpenBox's Advisor (its `auto` surrogate and acquisition) and HEBO with its
  defaults. Both pin old NumPy / scikit-learn that hone's environment cannot hold, so each runs
  as a worker process in an environment of its own (`process_peer.py`, `workers/`), named by
  `HONE_PEER_OPENBOX` / `HONE_PEER_HEBO`; skipped, saying how to set one up, when absent.
  Their CPU time is the worker's, which the per-tuner CPU figures of a report do not count.
- PromiseTune itself: `python -m benchmarks.tuners.promisetune --systems LLVM` runs it from a
  checkout of its repository (`PROMISETUNE_HOME`) under its own interpreter
  (`PROMISETUNE_PYTHON`) through `promisetune_driver.py`, which imports its module (none of its
  code is in hone); one run costs about 6 CPU minutes, so the PromiseTune report compares auto
  with its 30 published runs per system.
On pool tasks every peer's proposal is resolved to a row by the rule above.

## Tasks
- **Synthetic** (`benchmarks/tuners/tasks.py`): server-like response surfaces with a known
  optimum (dense sampling plus coordinate polishing when the task is built). Knobs cycle through
  integer thread counts (1-32), ordered discrete buffer sizes (4 ... 1024, powers of two), 4-way
  categorical modes, booleans and log-scale float timeouts (0.01-100); about 40 % of the knobs do
  nothing; each useful knob has a bell-shaped optimum at its own position; two knobs interact; a
  cliff (the most threads with the biggest buffers) makes the "server" fail (a failed trial, no
  value); multiplicative Gaussian noise. `--full`: 8 knobs at 3 % CV, 16 at 6 %, 4 at 10 %, 30 at
  5 % (the default suite and `--quick`: the first only).
- **COCO** (`benchmarks/tuners/coco.py`, PyPI `coco-experiment`): `bbob-mixint` f1 (sphere), f10
  (ellipsoid), f21 (Gallagher) in 5-D and `bbob-noisy` f101 (sphere), f104 (Rosenbrock), f122
  (Schaffer F7), all with Gaussian noise, in 2-D, instance 1 (the default suite and `--quick`:
  mixint f1 and noisy f101; `--full`: all six). Each variable becomes an ordered knob of 7
  evenly spaced values (integer variables: their integers, thinned) so every grid point's truth
  is known: mixint's f(x) plus 3 % multiplicative noise above the grid's best; noisy's own
  noise, truth = median of 31 evaluations (the noise is log-normal: its median is the noise-free
  value); COCO draws that noise from process-wide counters, so each measurement first sets them
  from the run's seeded generator (a rerun is the same run; before, it depended on which runs
  its worker had done before, and f122's median evaluations to 2 % moved from 39.5 to `-`
  between reruns of one code). Gaps are relative to the grid's median truth above the optimum
  (f's offset is arbitrary). The default is the grid point 1/3 along every axis, or, if that is
  within 10 % of the optimum, the point 2/3 along every axis (one fixed rule for every problem;
  f104's point at 1/3 is 0.7 % from the optimum, so its default is the point at 2/3, 32 % away).
- **Repeatable runs.** Every run draws from a generator seeded by its seed, and `python -m
  benchmarks.tuners` runs itself with `PYTHONHASHSEED=0`: SMAC3's proposals follow the order of
  sets of names, which Python's string hashing otherwise changes from one process to the next
  (memcached's figures for one seed differed between two invocations).
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
    5`; load average 2.8-4.2 while it ran). The script makes nginx's temporary prefix readable
    by its workers (which run as nobody) and refuses a run with error responses, so no row
    measures an error page.
  - `memcached`: TPS (maximise) of memcached 1.6 under `memcaslap -T 2 -c 32 -t 2s`; threads,
    requests per event (-R), CAS on/off (-C), max connections (-c 16 starves the 32 client
    connections: memcaslap hangs past its timeout, a failed row, or crawls: 12 configurations
    are failure regions); restarted by SIGKILL for every row; 48 configurations x 5 rows
    (`python -m benchmarks.tuners.measure.memcached --reps 5`; load average 0.8-3.2).
  - `redis-7` (validation): requests/s (maximise; the mean of SET and GET) of redis 7.0 under
    `redis-benchmark -t set,get -c 50 -n 40000` (about 1 s at the defaults; a 6 s timeout is a
    failed row); io-threads 1 / 2 / 4, io-threads-do-reads, appendfsync off (no AOF) / everysec
    / always, latency-tracking, hz 10 / 500; redis restarted with a config file and directory
    of its own for every row; 72 configurations x 5 rows (`python -m
    benchmarks.tuners.measure.redis --reps 5`, 20 minutes; load average 2.0-4.8). On 2 vCPUs
    shared with the client io threads busy-spin: io-threads 4 times out in every row (24
    failure regions) and io-threads 2 halves throughput and times out in 18 of its 120 rows.
    Truths: best 90.7k, default 73.8k (18.6 % from the best), worst 38.0k. Among the 24
    io-threads 1 configurations no knob moves throughput by much more than the rows' spread
    (median CV 16 %; AOF everysec and hz 500 read 5-8 % ahead on average, with no mechanism to
    explain it): much of the default's gap is which of them the noise favoured.
  - `postgresql-15` (validation): tps (maximise) of PostgreSQL 15 under `pgbench -c 8 -j 2 -T 3`
    (TPC-B-like, scale 10, initialised once on a throwaway cluster run as the postgres user);
    shared_buffers 16 / 128 / 512 MB, synchronous_commit, wal_buffers auto / 64 kB,
    max_wal_size 32 MB / 1 GB, commit_delay 0 / 1000 us; restarted with the row's settings and
    warmed up by a 1 s run for every row; 48 configurations x 5 rows (`python -m
    benchmarks.tuners.measure.postgresql --reps 5`, 18 minutes; load average 3.0-5.9). Over all
    rows synchronous_commit off gains 66 %, max_wal_size 32 MB and commit_delay 1000 each cost
    9 %, shared_buffers and wal_buffers move it by under 1 % (the data fits the OS cache); no
    row failed. Truths: best 5551, default 3381 (39 % from the best), worst 2249; rows spread
    by 12.6 % (median CV).
  - `haproxy` (held out: measured after `auto` was last changed, in neither side of the split,
    so in no `--set development|validation`; as a YAML of the folder it is in the default suite
    and `--full`, so in the whole suite's figures below, and in neither side's): HTTP
    requests/s (maximise) of HAProxy 2.6 balancing two nginx backends (one worker each, a 4 KiB
    page) on loopback for `wrk -t2 -c64 -d3s -H 'Connection: close'`, clients that close their
    connection after each request; nbthread 1 / 2 / 4, http-reuse never / safe / aggressive /
    always, option http-server-close or http-keep-alive, the servers' maxconn 4 / 16 /
    unlimited, the default HAProxy's own (2 threads, safe, keep-alive, unlimited); HAProxy
    restarted with a config file of its own for every row; 72 configurations x 5 rows
    (`python -m benchmarks.tuners.measure.haproxy --reps 5`, 18 minutes; load average 2.3-8.3,
    median 4.9, other work sharing the 2 cores). `http-reuse always` is what
    matters (over all rows 9.6k against 7.5-7.7k): every request is the first of its client
    connection, which `safe` never sends over an idle server connection; maxconn 4 costs a
    third; no row failed. Truths: best 16.3k (2 threads, always, keep-alive, maxconn 16),
    default 9.4k (42 % from the best), worst 3.3k; rows spread by 15.5 % (median CV), and the
    next configuration is 10.8 % below the best.
  Each table's section gives its noise (the spread of one configuration's rows) and how close
  its best configurations are. On nginx and memcached (rows spread by 8-9 %) the truth of a
  configuration, a mean of 5 rows, is known to about 4 %, and 2-4 configurations are within 2 %
  of the optimum with the next at 2.3 %: which of them a tuner deploys is partly chance, and
  telling 2 % from 2.3 % apart would take hundreds of readings; tables of 3 rows measured under
  heavier load spread by 25-37 %, and "evals to 2 %" on them measures luck. gcc-flags (1 %
  spread) resolves 2 % with a few readings.
"""
