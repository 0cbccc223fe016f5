"""The compress example's benchmark: compress the bundled corpus in chunks with the settings in
settings.conf and print throughput (MB/s of input) and the compression ratio."""

import bz2
import configparser
import lzma
import time
import zlib
from pathlib import Path

here = Path(__file__).parent
settings = configparser.ConfigParser()
settings.read(here / "settings.conf")
conf = settings["compress"]
method = conf.get("method")
level = conf.getint("level")
chunk = conf.getint("chunk_kb") * 1024
# Some data is already compressed: compressing it again only costs time.
skip_packed = conf.getboolean("skip_packed")

compressors = {
    "zlib": lambda data: zlib.compress(data, level),
    "bz2": lambda data: bz2.compress(data, max(1, level)),
    "lzma": lambda data: lzma.compress(data, preset=min(level, 9)),
}
compress = compressors[method]
files = sorted((here / "corpus").iterdir())
data = [f.read_bytes() for f in files if not (skip_packed and f.suffix == ".bin")]
passthrough = sum(f.stat().st_size for f in files if skip_packed and f.suffix == ".bin")

started = time.perf_counter()
size_in = size_out = 0
while time.perf_counter() - started < 0.6 or size_in == 0:
    for blob in data:
        for offset in range(0, len(blob), chunk):
            piece = blob[offset : offset + chunk]
            size_in += len(piece)
            size_out += len(compress(piece))
    size_in += passthrough
    size_out += passthrough
elapsed = time.perf_counter() - started
print(f"throughput_mbs: {size_in / elapsed / 1e6:.3f}")
print(f"ratio: {size_in / size_out:.4f}")
