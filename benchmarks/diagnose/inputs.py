"""Inputs for the diagnose benchmarks: a real `perf script` recording of a C program with a wide
call tree, and synthetic folded stacks with a chosen number of unique stacks."""

from __future__ import annotations

import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "tests" / "diagnose" / "programs"
CACHE = Path(tempfile.gettempdir()) / "hone-bench-diagnose"


def timed(argv: list[str], output: Path) -> float:
    """Wall seconds of one run of `argv`, its standard output written to `output`."""
    with output.open("wb") as out:
        start = time.perf_counter()
        subprocess.run(argv, stdout=out, check=True)
        return time.perf_counter() - start


#: Frame pointers and no inlining, so each function keeps its own frame in the stacks.
FLAGS = ("-O1", "-g", "-fno-omit-frame-pointer", "-fno-inline", "-pthread")


def build(name: str, folder: Path = CACHE, *extra: str, output: str | None = None) -> Path:
    """Compile tests/diagnose/programs/NAME.c into `folder` (again only when the source is
    newer); `extra` flags come after the defaults, so they win (`-fomit-frame-pointer`)."""
    folder.mkdir(parents=True, exist_ok=True)
    binary = folder / (output or name)
    source = PROGRAMS / f"{name}.c"
    if not binary.exists() or binary.stat().st_mtime < source.stat().st_mtime:
        command = ["gcc", *FLAGS, *extra, "-o", str(binary), str(source)]
        subprocess.run(command, check=True)
    return binary


def perf_script_input(cpu_seconds: float = 6.0, frequency: int = 4999) -> Path:
    """`perf script` text of hot_tree (32 functions, 8 levels, system calls) sampled at
    `frequency` Hz for `cpu_seconds` of its CPU time; recorded once and kept in CACHE.
    The program is run from a deep folder so module paths are as long as a distribution's."""
    text = CACHE / f"hot_tree-{cpu_seconds:g}s-{frequency}hz.perf.txt"
    if text.exists():
        return text
    deep = CACHE / "usr" / "lib" / "x86_64-linux-gnu" / "hone-benchmark"
    binary = build("hot_tree", deep)
    data = CACHE / "hot_tree.perf.data"
    subprocess.run(
        [
            "perf",
            "record",
            "-q",
            "-F",
            str(frequency),
            "-e",
            "cpu-clock",
            "-g",
            "-o",
            str(data),
            "--",
            str(binary),
            f"{cpu_seconds:g}",
        ],
        check=True,
    )
    partial = text.with_suffix(".part")
    with partial.open("wb") as out:
        subprocess.run(["perf", "script", "-i", str(data)], stdout=out, check=True)
    partial.rename(text)
    return text


def synthetic_folded(unique: int, seed: int = 1) -> dict[str, int]:
    """`unique` distinct stacks drawn from a random call tree (depth 4-40, C++-like names),
    counts from a heavy-tailed distribution, as in a large server profile."""
    rng = random.Random(seed)
    names = [
        f"{rng.choice(['net', 'db', 'http', 'log', 'rpc', 'std', 'core'])}::"
        f"{rng.choice(['Handler', 'Buffer', 'Queue', 'Pool', 'Codec'])}{i}::"
        f"{rng.choice(['run', 'read', 'write', 'flush', 'encode', 'poll'])}"
        for i in range(4000)
    ]
    folded: dict[str, int] = {}
    while len(folded) < unique:
        depth = rng.randint(4, 40)
        stack = ["server", "main"]
        node = 0
        for _ in range(depth):
            node = (node * 7 + rng.randint(0, 5)) % len(names)
            stack.append(names[node])
        key = ";".join(stack)
        folded[key] = folded.get(key, 0) + int(rng.paretovariate(1.2))
    return folded


def peer(tool: str) -> str:
    """A tool of inferno, the peer (FlameGraph's Rust port): on PATH, in ~/.cargo/bin, or
    installed there now with `cargo install inferno` (about 1.5 min; benchmarks only)."""
    cargo_bin = Path.home() / ".cargo" / "bin"
    for found in (shutil.which(tool), cargo_bin / tool):
        if found and Path(found).exists():
            return str(found)
    cargo = shutil.which("cargo") or str(cargo_bin / "cargo")
    if not Path(cargo).exists():
        raise SystemExit(f"{tool} is missing and there is no cargo to install inferno with")
    print(f"installing the peer: {cargo} install inferno", flush=True)
    subprocess.run([cargo, "install", "--quiet", "inferno"], check=True)
    return str(cargo_bin / tool)
