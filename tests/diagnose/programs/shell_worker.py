"""A Python program a shell starts: one thread ("hot-worker") burns CPU in
`churn_for_the_shell` while the main thread waits; it ends after the seconds given (argv[1]) or
as soon as the shell that started it is gone (a shell's background jobs ignore the SIGINT that
stops the shell, and would run on after the test)."""

import os
import sys
import threading
import time


def churn_for_the_shell() -> None:
    x = 0
    while True:
        x = (x * 31 + 7) % 1_000_003


threading.Thread(target=churn_for_the_shell, name="hot-worker", daemon=True).start()
parent, until = os.getppid(), time.monotonic() + float(sys.argv[1])
while os.getppid() == parent and time.monotonic() < until:
    time.sleep(0.1)
