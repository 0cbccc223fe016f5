"""One busy Python thread ("hot-spinner") among idle ones, for hone diagnose's Python test.

Usage: python spin_threads.py SECONDS"""

import sys
import threading
import time


def spin() -> None:
    x = 0
    while True:
        x = (x * 31 + 7) % 1_000_003


def idle(event: threading.Event) -> None:
    event.wait()


never = threading.Event()
for i in range(3):
    threading.Thread(target=idle, args=(never,), name=f"idle-{i}", daemon=True).start()
threading.Thread(target=spin, name="hot-spinner", daemon=True).start()
time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 10)
