"""`hone collect`: sample the machine's metrics to a CSV file, the terminal (a line per sample or
a live view) or a Prometheus endpoint."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from hone.cli.values import check_interval, finite_float
from hone.errors import HoneError, stop_on_sigterm
from hone.outfile import require_folder
from hone.output import finite


def register(app: typer.Typer) -> None:
    app.command("collect")(collect)


def collect(
    interval: float = typer.Option(
        1.0, "--interval", "-i", help="seconds between samples", parser=finite_float
    ),
    duration: float = typer.Option(
        None, "--duration", "-d", help="seconds to run (default: until Ctrl-C)", parser=finite_float
    ),
    count: int = typer.Option(None, "--count", "-n", help="number of samples", min=1),
    output: Path = typer.Option(
        None, "--output", "-o", help="CSV file in A-Tune's layout (.csv or .csv.gz; - for stdout)"
    ),
    workload_type: str = typer.Option(
        "default", "--type", help="workload.type label written to the CSV"
    ),
    appname: str = typer.Option(
        "default", "--app", help="workload.appname label written to the CSV"
    ),
    extended: bool = typer.Option(
        False, "--extended", help="also write hone's extra metrics (PSI, per device, memory)"
    ),
    disk: str = typer.Option(
        None, "--disk", help="disk for A-Tune's STORAGE columns (default: detected)"
    ),
    network: str = typer.Option(
        None,
        "--network",
        help="interface for A-Tune's NET columns (default: all, loopback included)",
    ),
    processes: bool = typer.Option(
        True, "--processes/--no-processes", help="per-process and per-thread CPU"
    ),
    live: bool = typer.Option(False, "--live", help="a terminal view redrawn every interval"),
    as_json: bool = typer.Option(
        False, "--json", help="one JSON object per sample on stdout (JSON Lines) instead of a line"
    ),
    serve: bool = typer.Option(
        False, "--serve", help="a Prometheus endpoint (node_exporter names) at --listen"
    ),
    listen: str = typer.Option(
        "127.0.0.1:9100", "--listen", help="HOST:PORT for --serve (0 as port: any free one)"
    ),
) -> None:
    """Collect system metrics from /proc and /sys every INTERVAL seconds."""
    from hone.collect.collector import Collector
    from hone.collect.csvfile import CsvWriter

    check_interval(interval)
    if duration is not None and count is not None:
        raise HoneError("give --duration or --count, not both")
    if duration is not None and not duration > 0:
        raise HoneError(f"--duration must be a number of seconds above 0, not {duration}")
    _check_devices(disk, network)
    stop_on_sigterm()  # `timeout 60 hone collect -o run.csv.gz` ends whole, exit code 143
    if serve:
        if live or output is not None or as_json or count is not None or duration is not None:
            raise HoneError(
                "--serve runs alone: no --live, --output, --json, --count or --duration"
            )
        _serve(listen, interval, lambda: Collector(disk=disk, network=network, processes=processes))
        return
    if live and str(output) == "-":
        raise HoneError("--live draws on the terminal: write the CSV to a file, not -")
    if as_json and str(output) == "-":  # the CSV took stdout and --json was dropped
        raise HoneError("--json and -o - both write to stdout: give one of them")
    if live and as_json:  # the view was drawn and --json dropped
        raise HoneError("--live draws a view, --json writes samples: give one of them")
    writer = None
    if output is not None:
        target = sys.stdout if str(output) == "-" else output
        if isinstance(target, Path):
            require_folder(target)
        if isinstance(target, Path) and target.is_file() and target.stat().st_size:
            # a second run into the same file would replace hours of labelled samples
            raise HoneError("exists: write to a new file (or remove this one)", file=target)
        writer = CsvWriter(target, workload_type=workload_type, appname=appname, extended=extended)
    with Collector(disk=disk, network=network, processes=processes) as collector:
        snapshots = collector.stream(interval, count=count, duration=duration)
        if writer is not None:
            snapshots = _tee(snapshots, writer)
        try:
            if live:
                from hone.collect.live import show

                show(snapshots)
            for snapshot in snapshots:
                if str(output) != "-":
                    typer.echo(_json_line(snapshot) if as_json else _line(snapshot))
        except KeyboardInterrupt:
            pass
        finally:
            if writer is not None:
                writer.close()


def _check_devices(disk: str | None, network: str | None) -> None:
    """A disk or interface named but not on this machine would leave its columns at zero or
    empty in every row, which a model trained on the CSV would take for an idle device."""
    from hone.collect import sources

    if disk and disk not in (disks := sources.whole_disks()):
        raise HoneError(f"--disk {disk!r}: no such disk here ({', '.join(sorted(disks))})")
    if network and network != "all" and network not in (nets := sources.read_netdev()):
        raise HoneError(f"--network {network!r}: no such interface here ({', '.join(nets)})")


def _serve(listen: str, interval: float, make_collector) -> None:  # type: ignore[no-untyped-def]
    from hone.collect.prometheus import Exporter

    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise HoneError(f"--listen {listen!r}: expected HOST:PORT")
    if int(port) > 65535:  # the socket would raise OverflowError, not an OSError
        raise HoneError(f"--listen {listen!r}: a port is 0 to 65535")
    collector = make_collector()
    try:
        exporter = Exporter(collector, interval, host, int(port))
    except OSError as exc:
        collector.close()
        raise HoneError(f"cannot listen on {listen}: {exc.strerror}") from None
    address, bound = exporter.address
    typer.echo(f"serving metrics on http://{address}:{bound}/metrics (Ctrl-C stops)", err=True)
    try:
        exporter.serve()
    except KeyboardInterrupt:
        pass
    finally:
        collector.close()


def _tee(snapshots, writer):  # type: ignore[no-untyped-def]
    for snapshot in snapshots:
        writer.write(snapshot)
        yield snapshot


def _json_line(snapshot) -> str:  # type: ignore[no-untyped-def]
    """A sample as one JSON object: its time and interval, every metric this machine measures
    (A-Tune's names), the metrics it cannot, and the busiest processes."""
    return json.dumps(
        finite(
            {
                "time": snapshot.time,
                "interval": snapshot.interval,
                "metrics": snapshot.metrics,
                "unavailable": list(snapshot.unavailable),
                "processes": [
                    {"pid": p.pid, "name": p.name, "cpu": p.cpu, "threads": p.threads}
                    for p in snapshot.processes
                ],
            }
        ),
        sort_keys=True,
    )


def _line(snapshot) -> str:  # type: ignore[no-untyped-def]
    m = snapshot.metrics
    top = snapshot.processes[0] if snapshot.processes else None
    busiest = f"  top {top.name}[{top.pid}] {top.cpu:.0f}%" if top else ""
    return (
        f"cpu {m['CPU.STAT.util']:5.1f}% (sys {m['CPU.STAT.sys']:4.1f} iowait "
        f"{m['CPU.STAT.iowait']:4.1f})  runq {m['SYS.LDAVG.runq-sz']:.0f}  "
        f"cs/s {m['SYS.TASKS.cswchs']:.0f}  disk r/w {m.get('STORAGE.STAT.rMBs', 0):.1f}/"
        f"{m.get('STORAGE.STAT.wMBs', 0):.1f} MB/s  net rx/tx {m['NET.STAT.rxkBs']:.0f}/"
        f"{m['NET.STAT.txkBs']:.0f} kB/s  psi cpu {m.get('PSI.CPU.some', 0):.1f}%{busiest}"
    )
