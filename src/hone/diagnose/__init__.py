"""hone diagnose: find the bottleneck of a running process or a command.

On-CPU profiles (record, fold, Profile, flame graphs, speedscope, pprof, diffs and tables) and
the runtime view (hot threads, off-CPU, locks, top-down, verdict, report) live in sibling modules.
"""
