"""`hone collect --serve`: the metrics as a Prometheus endpoint (text exposition format 0.0.4).

Two kinds of series. The kernel's cumulative counters, read fresh at every scrape and named as
node_exporter names them (`node_cpu_seconds_total{cpu,mode}`, `node_disk_read_bytes_total
{device}`, `node_pressure_cpu_waiting_seconds_total`, ...), so dashboards and alerts written for
node_exporter work unchanged; Prometheus takes their rates. And hone's interval figures from the
collector's latest snapshot, A-Tune's metrics included, as gauges: `hone_metric{name=
"CPU.STAT.util"}`, with the per-device ones split into `name` and `device`, and the busiest
processes as `hone_process_cpu_percent{pid,name}`."""

from __future__ import annotations

import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from hone.collect import sources
from hone.collect.collector import Collector, Snapshot

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_CPU_MODES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
_DISK = {  # node_exporter's name for each /proc/diskstats field, and its scale to base units
    "reads": ("reads_completed_total", 1), "rmerged": ("reads_merged_total", 1),
    "rsectors": ("read_bytes_total", 512), "rms": ("read_time_seconds_total", 1e-3),
    "writes": ("writes_completed_total", 1), "wmerged": ("writes_merged_total", 1),
    "wsectors": ("written_bytes_total", 512), "wms": ("write_time_seconds_total", 1e-3),
    "inflight": ("io_now", 1), "io_ms": ("io_time_seconds_total", 1e-3),
    "weighted_ms": ("io_time_weighted_seconds_total", 1e-3),
}  # fmt: skip
_NET = {
    "rx_bytes": "receive_bytes_total", "rx_packets": "receive_packets_total",
    "rx_errs": "receive_errs_total", "rx_drop": "receive_drop_total",
    "rx_fifo": "receive_fifo_total", "tx_bytes": "transmit_bytes_total",
    "tx_packets": "transmit_packets_total", "tx_errs": "transmit_errs_total",
    "tx_drop": "transmit_drop_total", "tx_fifo": "transmit_fifo_total",
}  # fmt: skip
_PSI = {"some": "waiting", "full": "stalled"}
_VMSTAT = ("pgfault", "pgmajfault", "pgpgin", "pgpgout", "pswpin", "pswpout", "oom_kill")
_NETSTAT = ("Tcp.RetransSegs", "Tcp.OutSegs", "Tcp.InSegs", "Tcp.CurrEstab",
            "TcpExt.ListenOverflows", "TcpExt.ListenDrops", "Udp.InErrors")  # fmt: skip
_DEVICE = re.compile(r"^(.*)\[(.+)\]$")


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class _Text:
    """Exposition lines, with one HELP/TYPE header per metric family."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._seen: set[str] = set()

    def add(self, name: str, kind: str, help_: str, value: float, /, **labels: str) -> None:
        if name not in self._seen:
            self._seen.add(name)
            self.lines += [f"# HELP {name} {help_}", f"# TYPE {name} {kind}"]
        inner = ",".join(f'{k}="{_label(v)}"' for k, v in labels.items())
        number = repr(float(value))  # the shortest text that reads back exactly
        self.lines.append(f"{name}{{{inner}}} {number}" if inner else f"{name} {number}")


def node_metrics(text: _Text) -> None:
    """The kernel's counters under node_exporter's names, read now."""
    stat = sources.read_stat()
    tick = 1.0 / sources.CLOCK_TICKS
    for cpu, ticks in sorted(stat.cpus.items()):
        for mode, value in zip(_CPU_MODES, ticks, strict=False):
            text.add("node_cpu_seconds_total", "counter", "Seconds the CPUs spent in each mode.",
                     value * tick, cpu=cpu.removeprefix("cpu"), mode=mode)  # fmt: skip
    for name, value, help_ in (
        ("node_context_switches_total", stat.ctxt, "Total number of context switches."),
        ("node_intr_total", stat.interrupts, "Total number of interrupts serviced."),
        ("node_forks_total", stat.forks, "Total number of forks."),
    ):
        text.add(name, "counter", help_, value)
    text.add("node_procs_running", "gauge", "Number of processes in runnable state.", stat.running)
    text.add("node_procs_blocked", "gauge", "Number of processes blocked on I/O.", stat.blocked)
    load = sources.read_loadavg()
    for name, value in (("1", load.ldavg1), ("5", load.ldavg5), ("15", load.ldavg15)):
        text.add(f"node_load{name}", "gauge", f"{name}m load average.", value)
    for key, value in sorted(sources.read_meminfo().items()):
        # node_exporter's names: Active(anon) is node_memory_Active_anon_bytes
        name = re.sub(r"[^a-zA-Z0-9_]", "_", re.sub(r"\((.*)\)", r"_\1", key))
        in_bytes = value if key.startswith("HugePages_") else value * 1024  # counts, not kB
        text.add(f"node_memory_{name}_bytes", "gauge", f"Memory information field {key}.",
                 in_bytes)  # fmt: skip
    for device, values in sorted(sources.read_diskstats(sources.whole_disks()).items()):
        for field, value in zip(sources.DISK_FIELDS, values, strict=True):
            suffix, scale = _DISK[field]
            kind = "gauge" if field == "inflight" else "counter"
            text.add(f"node_disk_{suffix}", kind, f"/proc/diskstats {field}.", value * scale,
                     device=device)  # fmt: skip
    for device, values in sorted(sources.read_netdev().items()):
        for field, value in zip(sources.NET_FIELDS, values, strict=True):
            if field in _NET:
                text.add(f"node_network_{_NET[field]}", "counter",
                         f"/proc/net/dev {field}.", value, device=device)  # fmt: skip
    for key, micros in sorted(sources.read_pressure().items()):
        resource, kind = key.split(".")
        if resource == "cpu" and kind == "full":
            continue  # node_exporter leaves out cpu full (meaningless system-wide)
        text.add(f"node_pressure_{resource}_{_PSI[kind]}_seconds_total", "counter",
                 f"Total time in seconds that {kind} tasks were stalled on {resource}.",
                 micros / 1e6)  # fmt: skip
    allocated, maximum = sources.read_file_nr()
    text.add("node_filefd_allocated", "gauge", "File descriptor statistics: allocated.", allocated)
    text.add("node_filefd_maximum", "gauge", "File descriptor statistics: maximum.", maximum)
    vmstat = sources.read_vmstat()
    for key in _VMSTAT:
        if key in vmstat:
            text.add(f"node_vmstat_{key}", "untyped", f"/proc/vmstat information field {key}.",
                     vmstat[key])  # fmt: skip
    netstat = sources.read_netstat()
    for key in _NETSTAT:
        if key in netstat:
            text.add(f"node_netstat_{key.replace('.', '_')}", "untyped",
                     f"Statistic {key.replace('.', '')}.", netstat[key])  # fmt: skip


def hone_metrics(text: _Text, snapshot: Snapshot | None) -> None:
    """The collector's latest interval: A-Tune's names and hone's, as gauges."""
    if snapshot is None:
        return
    text.add("hone_interval_seconds", "gauge", "Length of the interval of hone_metric.",
             snapshot.interval)  # fmt: skip
    for key, value in sorted(snapshot.metrics.items()):
        found = _DEVICE.match(key)
        labels = {"name": found.group(1), "device": found.group(2)} if found else {"name": key}
        text.add("hone_metric", "gauge", "hone's interval metrics (A-Tune's names).", value,
                 **labels)  # fmt: skip
    for name in snapshot.unavailable:
        text.add("hone_metric_unavailable", "gauge", "1 for a metric this machine cannot measure.",
                 1, name=name)  # fmt: skip
    for process in snapshot.processes:
        text.add("hone_process_cpu_percent", "gauge", "CPU of the busiest processes (100 = one "
                 "core).", process.cpu, pid=str(process.pid), name=process.name)  # fmt: skip


class Exporter:
    """The collector in a background thread, and an HTTP server for /metrics."""

    def __init__(self, collector: Collector, interval: float, host: str, port: int) -> None:
        self.collector = collector
        self.interval = interval
        self.latest: Snapshot | None = None
        self._stop = threading.Event()
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?")[0] not in ("/metrics", "/"):
                    self.send_error(404)
                    return
                body = exporter.render().encode()
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True

    @property
    def address(self) -> tuple[str, int]:
        return self.server.server_address[:2]  # type: ignore[return-value]

    def render(self) -> str:
        text = _Text()
        node_metrics(text)
        hone_metrics(text, self.latest)
        return "\n".join(text.lines) + "\n"

    def _collect(self) -> None:
        for snapshot in self.collector.stream(self.interval):
            self.latest = snapshot
            if self._stop.is_set():
                return

    def serve(self) -> None:
        """Serve until interrupted (Ctrl-C) or `shutdown()`."""
        worker = threading.Thread(target=self._collect, daemon=True)
        worker.start()
        try:
            self.server.serve_forever()
        finally:
            self._stop.set()
            self.server.server_close()

    def shutdown(self) -> None:
        self._stop.set()
        self.server.shutdown()
