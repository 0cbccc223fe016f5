"""`hone remote` against a server with nothing yet says so, as the local commands do: it
printed a table of headers alone (an empty box in a terminal, box lines in a pipe)."""

from __future__ import annotations

from typing import Any


def test_remote_listing_of_nothing_says_so(server: Any, hone_cli: Any) -> None:
    assert server.get("/api/diagnoses") == []  # the folder's server has studies, no diagnosis
    listed = hone_cli("remote", "--server", server.url, "diagnoses")
    assert (listed.returncode, listed.stdout) == (0, f"no saved diagnoses on {server.url}\n")
    assert hone_cli("remote", "--server", server.url, "diagnoses", "--json").stdout == "[]\n"
