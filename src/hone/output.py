"""The one place hone's human-readable output is set up. On a terminal Rich fits tables and
lines to the window; into a pipe or a file it would assume 80 columns, wrap lines in the middle
of values and cut table cells to `cach…`. Off a terminal every line and cell is written whole."""

from __future__ import annotations

import codecs
import io
import json
import math
import sys
import unicodedata
from typing import Any

from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

#: Wide enough for any line hone writes; tables take their natural width within it.
UNLIMITED = 100_000


def tolerant_streams() -> None:
    """Paths, process names and file contents are bytes, not always UTF-8: Python hands them
    over with surrogates for the odd bytes, which the strict stdout of a UTF-8 locale
    (LANG=en_US.UTF-8) refused with a UnicodeEncodeError traceback, mid-table. They are written
    back as the bytes they were; a stdout in another encoding (ASCII, Latin-1) writes `?` for
    what it cannot hold (`±`) instead of ending the command."""
    for stream in (sys.stdout, sys.stderr):
        if not isinstance(stream, io.TextIOWrapper):
            continue
        if codecs.lookup(stream.encoding).name == "utf-8":
            stream.reconfigure(errors="surrogateescape")
        elif stream is sys.stdout:
            stream.reconfigure(errors="replace")


def output_console(*, stderr: bool = False) -> Console:
    """Rich markup is off: a line is mostly the user's text (knob, metric and project names,
    units, paths, values), in which Rich took `latency[p99]` for a style and dropped it and
    `x[/y]` for a closing tag and ended in a traceback. A line that colours its own words
    says `markup=True` and escapes what it quotes."""
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(highlight=False, markup=False, stderr=stderr)
    return Console(highlight=False, markup=False, stderr=stderr, width=UNLIMITED, soft_wrap=True)


class DataTable(Table):
    """A table of the user's data: a cell is its text as given, never Rich markup, which took
    `[compress]` in `config(settings.conf: [compress] level)` for a tag and dropped it."""

    def add_row(self, *renderables: RenderableType | None, **options: Any) -> None:
        cells = [Text(cell) if isinstance(cell, str) else cell for cell in renderables]
        super().add_row(*cells, **options)


def one_line_text(text: str) -> str:
    """A command or value shown on one line of output: a line break (a set command written
    over two lines, `printf '%s\\n'` in a YAML double-quoted string) or another control
    character is written as its escape, `\\n`, not as a break that starts a second line."""
    return "".join(
        c.encode("unicode_escape").decode("ascii") if unicodedata.category(c) == "Cc" else c
        for c in text
    )


def help_settings() -> dict[str, Any]:
    """Typer's settings for `--help`: Rich's boxes on a terminal; into a pipe or a file Click's
    plain help, each option on one whole line (Rich would draw 80-column boxes and wrap every
    description, so `hone tune --help | grep` found half of one)."""
    if sys.stdout.isatty():
        return {}
    width = {"terminal_width": UNLIMITED, "max_content_width": UNLIMITED}
    return {"rich_markup_mode": None, "context_settings": width}


def number(value: float) -> str:
    """A measurement as people write it: `153,300`, `160.8`, `5.5`, `0.0123`; never
    `1.533e+05`. Three or four significant figures, as benchmark noise allows no more."""
    size = abs(value)
    if size >= 1000:
        return f"{value:,.0f}"
    if size >= 100:
        return f"{value:.1f}".rstrip("0").rstrip(".")
    if size >= 1 or size == 0:
        return f"{value:.2f}".rstrip("0").rstrip(".")
    if size >= 0.001:
        return f"{value:.4f}".rstrip("0").rstrip(".")
    return f"{value:.3g}"


def percent_gain(value: float | None, low: float | None = None, high: float | None = None) -> str:
    """A gain in per cent with its interval, `± half-width` when symmetric, else its ends;
    '' for none."""
    if value is None:
        return ""
    text = f"{value:+.1f} %"
    if low is None or high is None:
        return text
    below, above = f"{value - low:.1f}", f"{high - value:.1f}"
    return text + (f" ± {below} %" if below == above else f" ({low:+.1f} % to {high:+.1f} %)")


def state_text(state: str, alive: bool | None) -> str:
    """A study's state as the lists print it: `running (stale)` when the process recorded as
    running it is gone (a kill -9), so that a dead run is not taken for one still going."""
    return f"{state} (stale)" if state == "running" and alive is False else state


def config_text(config: dict[str, Any], separator: str = ", ") -> str:
    """A configuration as `name=value` pairs; a text value that is empty, begins or ends in a
    space, or holds a comma, an `=` or a quote is quoted (`mode='x,y'`): `mode=x,y,threads=1`
    and `mode= pad ,threads=2` read as other configurations."""
    return separator.join(f"{name}={_value_text(value)}" for name, value in config.items())


def _value_text(value: Any) -> str:
    if not isinstance(value, str):
        return str(value)
    plain = value and value == value.strip() and not any(c in value for c in ",='\"")
    return value if plain else repr(value)


def measured(metrics: dict[str, float], units: dict[str, str] | None = None) -> str:
    """`throughput=153,300 tps, latency=5.5 ms`: each metric with its unit where one is known."""
    units = units or {}
    return ", ".join(
        f"{name}={number(value)}" + (f" {units[name]}" if units.get(name) else "")
        for name, value in metrics.items()
    )


def same_rounds(metrics: dict[str, float], units: dict[str, str] | None = None) -> str:
    """The line under the best's figures (means of the confirmation rounds) naming the
    baseline's means in those rounds: the gain compares these two, not the baseline phase."""
    return f"      baseline in the same rounds: {measured(metrics, units)}" if metrics else ""


def print_json(data: Any) -> None:
    """`--json`: one JSON document on stdout, whole (no colour, no wrapping); NaN as null."""
    sys.stdout.write(json.dumps(finite(data), indent=2, sort_keys=True) + "\n")


def finite(data: Any) -> Any:
    """JSON has no NaN or infinity: such values become null, in any nesting."""
    if isinstance(data, float) and not math.isfinite(data):
        return None
    if isinstance(data, dict):
        return {str(k): finite(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [finite(v) for v in data]
    return data
