"""What a study of 10,000 trials costs hone serve and the browser: the bytes and time of
`GET /trials` with and without gzip, the first burst of the study's event stream (every trial
the page already holds, unless it says `after`), knob importance the first time and cached,
and the study page from navigation to drawn in headless Chromium.

    python -m benchmarks.serve.transfer [--trials 10000] [--repeats 7]

The study is written through `hone.storage.StudyStore` as a run writes it (benchmarks.serve.speed).
Run it with PYTHONPATH naming another checkout's src to measure that checkout's server."""

from __future__ import annotations

import argparse
import gzip
import os
import random
import shutil
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path

from benchmarks.serve.speed import make_study
from benchmarks.web import start_server, stop_server, study_page_loads


def fetch(url: str, encoding: str) -> tuple[int, float, int]:
    """Bytes on the wire, wall ms (request to last byte, decompressed) and the JSON's size."""
    request = urllib.request.Request(url, headers={"Accept-Encoding": encoding})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as response:
        body = response.read()
        zipped = response.headers.get("Content-Encoding") == "gzip"
    plain = gzip.decompress(body) if zipped else body
    return len(body), (time.perf_counter() - started) * 1000, len(plain)


def first_burst(url: str) -> tuple[int, float]:
    """Bytes and ms of the event stream up to its first `state` event (the replay of trials)."""
    started = time.perf_counter()
    size = 0
    with urllib.request.urlopen(url, timeout=120) as response:
        while line := response.readline():
            size += len(line)
            if line.startswith(b"event: state"):
                break
    return size, (time.perf_counter() - started) * 1000


def median_of(runs: list[tuple]) -> tuple:
    return tuple(statistics.median(column) for column in zip(*runs, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--importance-trials", type=int, default=1_500)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--page-repeats", type=int, default=5)
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="hone-bench-transfer-"))
    os.environ["HONE_HOME"] = str(home)
    from hone.storage import StudyStore

    rng = random.Random(7)
    store = StudyStore()
    started = time.monotonic()
    big = make_study(store, "big", args.trials, rng)
    mid = make_study(store, "mid", args.importance_trials, rng)
    print(f"made studies of {args.trials} and {args.importance_trials} trials in "
          f"{time.monotonic() - started:.0f} s")  # fmt: skip
    process, url = start_server(home)
    path = f"{url}/api/studies/{urllib.request.quote(big, safe='')}"
    try:
        for encoding in ("identity", "gzip"):
            runs = [fetch(path + "/trials", encoding) for _ in range(args.repeats + 1)][1:]
            wire, ms, plain = median_of(runs)
            print(f"GET /trials ({args.trials} trials), Accept-Encoding {encoding}: "
                  f"{wire / 1e6:.2f} MB on the wire ({plain / 1e6:.2f} MB of JSON), "
                  f"median {ms:.0f} ms ({args.repeats} requests)")  # fmt: skip
        for query in ("", f"?after={args.trials}"):
            size, ms = first_burst(path + "/events" + query)
            print(f"GET /events{query}: {size / 1e6:.2f} MB before the first state event, "
                  f"{ms:.0f} ms")  # fmt: skip
        for name, trials in ((mid, args.importance_trials), (big, args.trials)):
            where = f"{url}/api/studies/{urllib.request.quote(name, safe='')}/importance"
            first = fetch(where, "gzip")[1]
            again = statistics.median(fetch(where, "gzip")[1] for _ in range(args.repeats))
            print(f"GET /importance ({trials} trials): first {first:.0f} ms, "
                  f"cached median {again:.0f} ms")  # fmt: skip
        runs = [(x["drawn_ms"], x["wire"]) for x in study_page_loads(url, big, args.page_repeats)]
        drawn = [ms for ms, _ in runs]
        print(f"study page ({args.trials} trials), navigation to drawn: median "
              f"{statistics.median(drawn):.0f} ms, first (cold) {drawn[0]:.0f} ms, "
              f"/trials {runs[-1][1] / 1e6:.2f} MB on the wire "
              f"({args.page_repeats} loads)")  # fmt: skip
    finally:
        stop_server(process)
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
