"""Writes the bundled corpus (run once; its output is committed): server logs, CSV metrics and
pre-compressed bytes, the three kinds of data a server compresses, in fixed, seeded amounts."""

import json
import random
import zlib
from pathlib import Path

rng = random.Random(20261122)
here = Path(__file__).parent / "corpus"
here.mkdir(exist_ok=True)

paths = ["/api/v1/items", "/api/v1/users", "/static/app.js", "/health", "/api/v1/orders"]
agents = ["curl/7.88", "Mozilla/5.0 (X11; Linux x86_64)", "wrk/4.2", "python-requests/2.31"]
with open(here / "access.log", "w") as out:
    for i in range(9000):
        out.write(
            f"127.0.0.{rng.randint(1, 254)} - - [22/Nov/2026:10:{i // 600 % 60:02d}:{i % 60:02d}"
            f" +0000] \"GET {rng.choice(paths)}?id={rng.randint(1, 99999)} HTTP/1.1\" "
            f"{rng.choice([200, 200, 200, 304, 404, 500])} {rng.randint(80, 40000)} "
            f"\"-\" \"{rng.choice(agents)}\" rt={rng.random():.3f}\n"
        )
with open(here / "metrics.csv", "w") as out:
    out.write("time,cpu_user,cpu_sys,mem_used,net_rx,net_tx,disk_r,disk_w\n")
    for i in range(12000):
        out.write(
            f"{1700000000 + i},{rng.gauss(40, 8):.2f},{rng.gauss(9, 2):.2f},"
            f"{rng.randint(10**9, 2 * 10**9)},{rng.randint(0, 10**7)},{rng.randint(0, 10**7)},"
            f"{rng.randint(0, 10**6)},{rng.randint(0, 10**6)}\n"
        )
with open(here / "events.json", "w") as out:
    for i in range(5000):
        event = {"id": i, "kind": rng.choice(["login", "logout", "buy", "view"]),
                 "user": f"user{rng.randint(1, 500)}", "amount": round(rng.random() * 100, 2),
                 "tags": rng.sample(["a", "b", "c", "d", "e", "f"], 3)}
        out.write(json.dumps(event) + "\n")
blob = zlib.compress(bytes(rng.getrandbits(8) for _ in range(150_000)), 9)
(here / "packed.bin").write_bytes(blob)
