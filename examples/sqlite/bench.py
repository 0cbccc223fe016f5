"""Small committed transactions against SQLite, as an application logging events would make
them: one row per transaction, each committed on its own. Reads its PRAGMAs from the settings
file hone tunes and prints `commits_per_s: N`."""

import configparser
import os
import sqlite3
import sys
import time
from pathlib import Path

COMMITS = int(os.environ.get("SQLITE_COMMITS", "60"))

work = Path(os.environ.get("HONE_WORKDIR", "."))
settings = configparser.ConfigParser()
settings.read(work / "sqlite.conf")
pragmas = settings["sqlite"]
database = work / "bench.db"
for suffix in ("", "-journal", "-wal", "-shm"):
    Path(f"{database}{suffix}").unlink(missing_ok=True)

connection = sqlite3.connect(database, isolation_level=None)
for name in ("journal_mode", "synchronous", "cache_size"):
    value = pragmas[name]
    if not value.lstrip("-").isalnum():
        sys.exit(f"bad {name}: {value!r}")
    connection.execute(f"PRAGMA {name}={value}")
connection.execute("CREATE TABLE events (id INTEGER PRIMARY KEY, body TEXT)")
started = time.perf_counter()
for i in range(COMMITS):
    connection.execute("BEGIN")
    connection.execute("INSERT INTO events (body) VALUES (?)", (f"event {i} " + "x" * 200,))
    connection.execute("COMMIT")
elapsed = time.perf_counter() - started
connection.close()
print(f"commits_per_s: {COMMITS / elapsed:.1f}")
