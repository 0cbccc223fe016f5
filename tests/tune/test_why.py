"""Why it won: a real SQLite study profiles one reading of the baseline and of the winner under
perf and names the sync path that moved; without perf the study still finishes and says why
there is no profile."""

from __future__ import annotations

import json
import os
import re
import shutil
import textwrap
from pathlib import Path

import pytest
import yaml

from hone.diagnose.fold import Frame
from hone.diagnose.profile import Profile
from hone.storage import StudyStore
from hone.tune import why

ROOT = Path(__file__).resolve().parents[2]
SQLITE = ROOT / "examples" / "sqlite"
SYNC = ("fdatasync", "fsync")


def test_sqlite_report_names_the_sync_path(
    hone_cli, hone_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SQLITE_COMMITS", "20")
    run = hone_cli(
        "tune", str(SQLITE), "--seed", "1", "--budget", "6", "--baseline", "2",
        "--max-repeats", "3", "--allow-risk", "--apply", "always", "--why",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "why it won" in run.stdout
    shown_json = json.loads(hone_cli("show", "sqlite#1", "--json").stdout)
    study = shown_json["study"]
    why = study["attrs"]["why"]
    assert "missing" not in why, why
    # the trees fitted for the explanation are kept, and shown without fitting them again
    kept = StudyStore().find("sqlite#1").attrs["insight"]["knobs"]
    assert shown_json["knobs"] == kept
    assert why["importance"] == {row["knob"]: round(row["share"], 4) for row in kept}
    best = study["attrs"]["result"]["best"]
    assert best["synchronous"] == "off" or best["journal_mode"] == "memory"
    assert why["process"].startswith("python")
    sync = [e for e in why["explained"] if any(s in e["name"] for s in SYNC)]
    assert sync, why["explained"]
    # the sync on commit went away (its share of the baseline's time was 0.07 to 0.15 here)
    assert sync[0]["before"] > 0.05 and sync[0]["after"] < sync[0]["before"] / 4
    assert any(s in why["text"] for s in SYNC) and "fell" in why["text"]
    assert set(why["readings"]) == {"baseline", "winner"}
    shown = hone_cli("show", "sqlite#1").stdout
    assert "why it won:" in shown and any(s in shown for s in SYNC)
    report = Path(hone_cli("report", "sqlite#1").stdout.strip()).read_text()
    assert "Why it won" in report and any(s in report for s in SYNC)


def test_without_perf_the_study_finishes_and_says_why(
    hone_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = tmp_path / "bin"  # a PATH with a shell and its tools, and no perf
    tools.mkdir()
    for name in ("sh", "cat", "grep", "printf"):
        os.symlink(shutil.which(name), tools / name)
    monkeypatch.setenv("PATH", str(tools))
    project = _mode_project(
        tmp_path,
        "why-missing",
        """'grep -q fast "$HONE_WORKDIR/mode" && printf "x 200" || printf "x 100"'""",
        "x",
        budget=4,
    )
    asked = hone_cli("tune", str(project), "--why")
    assert asked.returncode != 0 and "--why: perf is not installed" in asked.stderr
    run = hone_cli("tune", str(project))
    assert run.returncode == 0, run.stderr
    assert "why it won: not profiled (perf is not installed)" in run.stdout
    attrs = json.loads(hone_cli("show", "why-missing", "--json").stdout)["study"]["attrs"]
    assert attrs["result"]["outcome"] == "applied"
    assert attrs["why"] == {"missing": "perf is not installed"}


def test_the_paragraph_names_what_moved_and_the_knob_that_acts_on_it() -> None:
    main, io = Frame("main", "app"), Frame("[waiting for I/O]", "")
    sync = Frame("fdatasync", "libc.so.6")
    work = (main, Frame("compute", "app"))
    idle = ("sh", (Frame("do_wait", "[kernel.kallsyms]"), Frame("[sleeping]", "")))
    before = Profile(stacks={("app", (main, sync, io)): 800, ("app", work): 200, idle: 9000})
    after = Profile(stacks={("app", work): 190, ("app", (main, sync, io)): 10, idle: 900})
    moved = {"synchronous": ("full", "off"), "threads": (4, 8)}
    record = why.compare(before, after, moved, {"synchronous": 0.7, "threads": 0.3})
    assert record["process"] == "app"  # the shell only sleeps: not the worker
    assert record["text"] == (
        "fdatasync (the sync of written data to the disk on commit) fell from 80 % to 5.0 % of "
        "app's time: the winner set synchronous=off (was full). [waiting for I/O] (waiting for "
        "the disk) fell from 80 % to 5.0 % of app's time. Knobs that matter most: synchronous "
        "(70 %), threads (30 %)."
    )
    assert {c["name"] for c in record["changes"][:2]} == {"[waiting for I/O]", "fdatasync"}
    assert record["explained"][0]["knobs"] == ["synchronous"]  # threads is not about syncing
    assert why.lines({"missing": "perf is not installed"}) == [
        "why it won: no profile (perf is not installed)"
    ]


def test_the_largest_move_leads_even_when_it_is_of_no_known_kind() -> None:
    # examples/compress: lzma's library gave way to zlib's; the run queue wait that rose a
    # little (a busy machine) is of a known kind, but it is not why the winner won.
    main, queue = Frame("main", "python3"), Frame("[waiting for a CPU]", "")
    lzma, zlib = Frame("[liblzma.so.5]", "liblzma.so.5"), Frame("[libz.so.1]", "libz.so.1")
    before = Profile(stacks={("python3", (main, lzma)): 650, ("python3", (main, queue)): 350})
    after = Profile(stacks={("python3", (main, zlib)): 560, ("python3", (main, queue)): 440})
    record = why.compare(before, after, {"method": ("lzma", "zlib")}, {"method": 0.8})
    assert record["text"].startswith(
        "the time in [liblzma.so.5] itself fell from 65 % to 0.0 % of python3's time. "
        "[waiting for a CPU] (waiting in the run queue for a CPU) rose from 35 % to 44 % of "
        "python3's time."
    )


def test_the_lead_is_own_time_not_a_caller_the_unwinder_saw_differently() -> None:
    # examples/gcc-flags: the -O2 build's stacks reach __libc_start_call_main, the -O1 build's
    # did not (0 % -> 100 % of the total): what moved is the time in main itself.
    start, main = Frame("__libc_start_call_main", "libc.so.6"), Frame("main", "workload")
    sort, queue = Frame("merge_sort", "workload"), Frame("[waiting for a CPU]", "")
    before = Profile(
        stacks={
            ("workload", (main,)): 700,
            ("workload", (main, sort)): 150,
            ("workload", (main, queue)): 150,
        }
    )
    after = Profile(
        stacks={
            ("workload", (start, main)): 300,
            ("workload", (start, main, sort)): 500,
            ("workload", (start, main, queue)): 200,
        }
    )
    record = why.compare(before, after, {"opt": ("-O1", "-O2")}, {"opt": 0.9})
    assert record["changes"][0]["name"] == "__libc_start_call_main"  # the table: total shares
    assert record["text"].startswith(
        "the time in main itself fell from 70 % to 30 % of workload's time. [waiting for a CPU]"
    )


def test_the_fall_the_knob_acts_on_leads_not_a_share_that_rose_as_the_rest_went_away() -> None:
    # examples/postgresql, synchronous_commit off: the backends' lock waits (waiting for the
    # one that flushes the WAL) and the WAL sync fell; the run-queue wait took as many seconds
    # as before, yet its share rose as the time around it went away. It ranked between the
    # two and the paragraph did not name the sync nor synchronous_commit. The I/O wait, the
    # sync's and a read's, fell further than the sync: it does not stand for it either.
    libc, kernel = "libc.so.6", "[kernel.kallsyms]"
    main = Frame("PostgresMain", "postgres")
    lock = (Frame("__futex_abstimed_wait_common", libc), Frame("__x64_sys_futex", kernel))
    wal = (Frame("XLogFlush", "postgres"), Frame("__x64_sys_fdatasync", kernel))
    scan, parse = Frame("ExecScan", "postgres"), Frame("base_yyparse", "postgres")

    read = (Frame("pread64", libc), Frame("[waiting for I/O]", ""))

    def profile(locks: int, syncs: int, reads: int, queue: int, work: int) -> Profile:
        return Profile(
            stacks={
                ("postgres", (main, *lock, Frame("[sleeping]", ""))): locks,
                ("postgres", (main, *wal, Frame("[waiting for I/O]", ""))): syncs,
                ("postgres", (main, *read)): reads,
                ("postgres", (main, Frame("[waiting for a CPU]", ""))): queue,
                ("postgres", (main, scan)): work,
                ("postgres", (main, parse)): work,
            }
        )

    # the winner waits in the run queue as long as the baseline, in under a third of its time
    before, after = profile(1200, 750, 150, 300, 300), profile(30, 5, 0, 300, 250)
    moved = {"synchronous_commit": ("on", "off")}
    record = why.compare(before, after, moved, {"synchronous_commit": 1.0})
    assert [e["name"] for e in record["explained"]] == [
        "XLogFlush", "__futex_abstimed_wait_common", "[waiting for I/O]", "[waiting for a CPU]"
    ]  # fmt: skip
    assert record["text"].startswith(
        "XLogFlush (the sync of written data to the disk on commit) fell from 25 % to 0.6 % of "
        "postgres's time: the winner set synchronous_commit=off (was on). "
        "__futex_abstimed_wait_common (lock waits between threads) fell from 40 % to 3.6 %"
    )


def test_every_fall_a_knob_acts_on_leads_that_of_the_most_important_knob_first() -> None:
    # examples/sqlite under load: synchronous=off and journal_mode=persist; the sync was 7 %
    # of the baseline, the journal's unlinks 20 %, the I/O wait (theirs and a read's) 37 %.
    # The unlinks led as the larger fall, the I/O wait came next, and the sync went unnamed.
    main, io = Frame("main", "python3"), Frame("[waiting for I/O]", "")
    sync, unlink = Frame("fdatasync", "libc.so.6"), Frame("__GI___unlink", "libc.so.6")
    read, step = Frame("pread64", "libc.so.6"), Frame("sqlite3VdbeExec", "libsqlite3.so.0")
    work = ("python3", (main, step))
    before = Profile(
        stacks={
            ("python3", (main, sync, io)): 70,
            ("python3", (main, unlink, io)): 200,
            ("python3", (main, read, io)): 100,
            work: 630,
        }
    )
    after = Profile(stacks={("python3", (main, read, io)): 10, work: 630})
    moved = {"synchronous": ("full", "off"), "journal_mode": ("delete", "persist")}
    record = why.compare(before, after, moved, {"synchronous": 0.8, "journal_mode": 0.2})
    assert [e["name"] for e in record["explained"]] == [
        "fdatasync", "__GI___unlink", "[waiting for I/O]"
    ]  # fmt: skip
    assert record["text"].startswith(
        "fdatasync (the sync of written data to the disk on commit) fell from 7.0 % to 0.0 % of "
        "python3's time: the winner set synchronous=off (was full), journal_mode=persist (was "
        "delete). __GI___unlink (creating and deleting files"
    )


POSTGRESQL = ROOT / "examples" / "postgresql"
WAL = ("fdatasync", "fsync", "XLogFlush")


def test_postgresql_report_names_the_wal_sync_path(
    hone_cli, hone_home: Path, tmp_path: Path
) -> None:
    """The PostgreSQL example with synchronous_commit alone and 1 s pgbench runs: the server
    hone launched is recorded beside pgbench, and its backends' WAL sync on commit falls."""
    project = yaml.safe_load((POSTGRESQL / "hone.yaml").read_text())
    sync = {**project["knobs"]["synchronous_commit"], "values": ["off", "on"]}  # off first
    project["knobs"] = {"synchronous_commit": sync}
    project["benchmark"]["command"] = project["benchmark"]["command"].replace("-T 4", "-T 1")
    project["benchmark"]["warmup"] = False
    # one reading of each in the search and in the confirmation: the two profiled readings
    # that follow are what is under test
    project["tuning"] = {"engine": "gridsearch", "budget": 1, "baseline": 1,
                         "confirm": {"candidates": 1, "rounds": 1}}  # fmt: skip
    shutil.copy(POSTGRESQL / "setup.sh", tmp_path / "setup.sh")
    (tmp_path / "hone.yaml").write_text(yaml.safe_dump(project))
    run = hone_cli(
        "tune", str(tmp_path), "--max-repeats", "2", "--allow-risk", "--apply", "never", "--why",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    study = json.loads(hone_cli("show", "postgresql#1", "--json").stdout)["study"]
    assert study["attrs"]["result"]["best"] == {"synchronous_commit": "off"}
    why = study["attrs"]["why"]
    assert "missing" not in why, why
    assert why["process"] == "postgres"  # the server's backends, not pgbench
    sync = [e for e in why["explained"] if any(s in e["name"] for s in WAL)]
    assert sync, why["explained"]
    assert sync[0]["before"] > 0.05 and sync[0]["delta"] < -0.05
    assert "synchronous_commit=off" in why["text"] and "fell" in why["text"]
    report = Path(hone_cli("report", "postgresql#1").stdout.strip()).read_text()
    assert "Why it won" in report and any(s in report for s in WAL)


REDIS = """\
name: why-redis
workload:
  process:
    command: [redis-server, --port, "$HONE_PORT", --bind, 127.0.0.1, --save, "",
              --appendonly, "no", --dir, "$HONE_WORKDIR", --daemonize, "no"]
    stop_signal: KILL
  ready: redis-cli -p $HONE_PORT ping
knobs:
  hz: {type: categorical, values: [100, 10], default: 10, flag: --hz}
benchmark:
  command: >-
    redis-benchmark -p $HONE_PORT -t set,get -n 10000 -c 50 -q
    && redis-cli -p $HONE_PORT info server
  warmup: false
metrics: {hz: {pattern: 'configured_hz:(\\d+)', direction: maximize}}
tuning: {engine: gridsearch, budget: 1, baseline: 1, confirm: {candidates: 1, rounds: 1}}
"""


def test_a_launched_server_is_explained_not_its_load_generator(
    hone_cli, hone_home: Path, tmp_path: Path
) -> None:
    """redis-benchmark spends more time on a CPU than the redis-server hone launched, yet the
    server's knob was tuned: the explanation is about redis-server. The metric is the server's
    own hz, so the winner (hz=100) is known without a noisy benchmark deciding it."""
    (tmp_path / "hone.yaml").write_text(REDIS)
    run = hone_cli("tune", str(tmp_path), "--max-repeats", "2", "--apply", "never", "--why")
    assert run.returncode == 0, run.stderr
    why = StudyStore().find("why-redis").attrs["why"]
    assert "missing" not in why, why
    assert why["process"] == "redis-server", why["process"]
    assert "redis-benchmark" not in why["text"]


@pytest.mark.slow
def test_a_node_benchmark_is_explained_by_its_javascript(hone_cli, tmp_path: Path) -> None:
    """The profiled readings run node with the flags that have V8 write its perf map (module
    hone.diagnose.nodejs): without them the JavaScript was one anonymous `[perf-PID.map]`."""
    program = ROOT / "tests" / "tune" / "programs" / "checksum.js"
    benchmark = f"""'node {program} "$HONE_WORKDIR/mode"'"""
    project = _mode_project(tmp_path, "why-node", benchmark, "ops", budget=3)
    maps = set(Path("/tmp").glob("perf-*.map"))
    run = hone_cli("tune", str(project), "--why")
    assert run.returncode == 0, run.stderr
    assert set(Path("/tmp").glob("perf-*.map")) <= maps  # the readings' maps, once read
    why = json.loads(hone_cli("show", "why-node", "--json").stdout)["study"]["attrs"]["why"]
    assert "missing" not in why, why
    # node's idle threads' waits are most of its time: the checksum is 10-15 % of it
    slow = [c for c in why["changes"] if c["name"] == "slowChecksum"]
    assert slow and slow[0]["before"] > 0.05 and slow[0]["after"] < 0.01, why["changes"]
    assert re.search(r"(slow|fast)Checksum itself (fell|rose)", why["text"]), why["text"]


def _mode_project(folder: Path, name: str, benchmark: str, metric: str, budget: int) -> Path:
    """A project of one knob, `mode` (slow or fast, kept in a file of the study's folder), whose
    benchmark prints `METRIC N` (maximised)."""
    project = folder / "hone.yaml"
    project.write_text(
        textwrap.dedent(f"""\
        name: {name}
        knobs:
          mode:
            type: categorical
            values: [slow, fast]
            shell:
              get: cat "$HONE_WORKDIR/mode" 2>/dev/null || printf slow
              set: printf %s $value > "$HONE_WORKDIR/mode"
        benchmark: {benchmark}
        metrics: {{{metric}: {{pattern: '{metric} (\\d+)', direction: maximize}}}}
        tuning: {{budget: {budget}, baseline: 2, engine: random, seed: 1}}
        """)
    )
    return project
