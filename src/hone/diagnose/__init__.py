"""hone diagnose: find the bottleneck of a running process or a command.

On-CPU profiles:
    record      perf record -F 99 -g on a pid or a command -> Recording (perf.data kept)
    fold        perf script text -> folded stacks (stackcollapse-perf/inferno semantics)
    profile     Profile: samples by (thread, stack of Frame(function, module)); .hone files
    tables      self/total tables by function and module, call trees, one-line summary
    diff        share changes between two profiles, by function or module
    flamegraph  interactive SVG flame graphs, differential ones too
    speedscope  speedscope JSON;  pprof: gzipped profile.proto

The runtime view (hot threads, off-CPU, locks, top-down, verdict, report) lives in sibling
modules.
"""
