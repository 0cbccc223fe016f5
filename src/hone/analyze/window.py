"""The length of the window a model names a workload from (module features says why 45 s):
here, apart, because `hone analyze`'s default duration is read whenever any `hone` command
starts, and module features imports NumPy."""

from hone.errors import HoneError

WINDOW_SECONDS = 45.0


def check_duration(duration: float, interval: float) -> None:
    """A sample needs two intervals at least (a rate is a difference); checked here, before
    `hone analyze` imports the classifier, so a bad option is answered at once."""
    if duration < 2 * interval:
        raise HoneError("--duration must cover at least two intervals")
