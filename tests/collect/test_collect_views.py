"""`hone collect --serve` answers Prometheus scrapes with node_exporter's names and hone's
interval metrics, counters that move between scrapes; `--live` draws the terminal view."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_]+="(?:[^"\\]|\\.)*",?)*\})? (\S+)$')


def scrape(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = response.read().decode()
    series: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            assert re.match(r"^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* \S", line), line
            continue
        found = LINE.match(line)
        assert found, f"not in the exposition format: {line!r}"
        series[found.group(1) + (found.group(2) or "")] = float(found.group(3))
    return series


@pytest.fixture
def exporter(hone_home):
    proc = subprocess.Popen(
        [sys.executable, "-m", "hone", "collect", "--serve", "--listen", "127.0.0.1:0",
         "--interval", "0.5"],
        stderr=subprocess.PIPE, text=True,
        env={**os.environ, "HONE_HOME": str(hone_home), "PYTHONFAULTHANDLER": "1"},
        # Ctrl-C as in a terminal, even where the test run was started in the background
        # (a shell's background job inherits SIGINT ignored, and Python then never sees it)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    try:
        line = proc.stderr.readline()
        found = re.search(r"(http://\S+/metrics)", line)
        assert found, line
        yield found.group(1)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # say what it was doing
            proc.send_signal(signal.SIGABRT)  # faulthandler prints every thread's stack
            code = f"hung; stderr: {proc.communicate(timeout=30)[1][-4000:]}"
        assert code == 0


def test_serve_speaks_node_exporter_and_hone(exporter: str) -> None:
    time.sleep(1.2)  # let the collector finish an interval
    first = scrape(exporter)
    ctxt = first["node_context_switches_total"]
    assert first['node_cpu_seconds_total{cpu="0",mode="idle"}'] > 0
    assert first["node_memory_MemTotal_bytes"] > 100 * 2**20
    # Active(anon) as node_exporter names it, which dashboards use (was Active_anon__bytes)
    assert first["node_memory_Active_anon_bytes"] > 0
    assert not [k for k in first if k.startswith("node_memory_") and "__" in k]
    assert any(k.startswith("node_disk_written_bytes_total{device=") for k in first)
    assert 'node_network_receive_bytes_total{device="lo"}' in first
    assert "node_pressure_cpu_waiting_seconds_total" in first
    assert 0 <= first['hone_metric{name="CPU.STAT.util"}'] <= 100
    assert any(k.startswith('hone_metric{name="STORAGE.STAT.util",device=') for k in first)
    assert first['hone_metric_unavailable{name="MEM.BANDWIDTH.Total_Util"}'] == 1
    assert any(k.startswith("hone_process_cpu_percent{") for k in first)
    time.sleep(0.6)
    assert scrape(exporter)["node_context_switches_total"] > ctxt
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(exporter.replace("/metrics", "/other"), timeout=10)
    assert missing.value.code == 404


def test_serve_refuses_a_bad_address(hone_cli) -> None:
    result = hone_cli("collect", "--serve", "--listen", "nowhere")
    assert result.returncode == 2 and "expected HOST:PORT" in result.stderr
    result = hone_cli("collect", "--serve", "--listen", "127.0.0.1:99999")
    assert result.returncode == 2 and "a port is 0 to 65535" in result.stderr
    assert "Traceback" not in result.stderr
    result = hone_cli("collect", "--serve", "--live")
    assert result.returncode == 2 and "--serve runs alone" in result.stderr


def test_live_view_draws_every_section(hone_cli) -> None:
    result = hone_cli("collect", "--live", "--count", "2", "--interval", "0.5")
    assert result.returncode == 0, result.stderr
    for title in ("system", "CPUs", "disks", "network", "busiest processes"):
        assert title in result.stdout
    assert re.search(r"\blo\b", result.stdout) and "cpu0" in result.stdout
    # off a terminal each interval's view follows the last, under its time (was the last only)
    assert result.stdout.count("busiest processes") == 2
    assert len(re.findall(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$", result.stdout, re.M)) == 2


def test_samples_as_json_lines_read_back(hone_cli) -> None:
    """`--json`: one object per sample, every value valid JSON (no NaN), the busiest processes."""
    import json

    result = hone_cli("collect", "-i", "0.5", "-n", "2", "--json")
    assert result.returncode == 0, result.stderr
    samples = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(samples) == 2
    for sample in samples:
        assert sample["interval"] == pytest.approx(0.5, abs=0.3)
        assert 0 <= sample["metrics"]["CPU.STAT.util"] <= 100
        assert isinstance(sample["processes"], list) and "unavailable" in sample
    assert samples[1]["time"] > samples[0]["time"]
