"""The length of the window a model names a workload from (module features says why 45 s):
here, apart, because `hone analyze`'s default duration is read whenever any `hone` command
starts, and module features imports NumPy."""

WINDOW_SECONDS = 45.0
