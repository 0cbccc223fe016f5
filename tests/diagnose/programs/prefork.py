"""A pre-fork server in miniature: the parent waits on its workers, each worker burns CPU in
`crunch` until the seconds given (argv[1]) are up."""

import multiprocessing
import sys
import time


def crunch(until: float) -> None:
    total = 0
    while time.monotonic() < until:
        for i in range(10_000):
            total += i * i


if __name__ == "__main__":
    until = time.monotonic() + float(sys.argv[1])
    workers = [multiprocessing.Process(target=crunch, args=(until,)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
