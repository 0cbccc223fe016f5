"""`hone remote --token-file` with an empty file names the file; it used to send no token and
report the server's 401, as if the server were at fault."""

from __future__ import annotations

from pathlib import Path


def test_an_empty_token_file_is_one_line(tmp_path: Path, hone_run, monkeypatch) -> None:
    monkeypatch.delenv("HONE_TOKEN", raising=False)
    token = tmp_path / "token"
    token.write_text("\n")
    ran = hone_run(
        "remote", "--server", "http://127.0.0.1:9", "--token-file", str(token), "studies"
    )
    assert ran.one_line() == f"hone: {token}: empty token file: its first line must be the token"


def test_the_gain_column_names_the_unit_of_its_interval() -> None:
    from hone.output import percent_gain  # the studies tables of `remote` and `studies`

    assert percent_gain(317.4, 108.7, 526.1) == "+317.4 % ± 208.7 %"
    assert percent_gain(65.0, 10.5, 146.0) == "+65.0 % (+10.5 % to +146.0 %)"
