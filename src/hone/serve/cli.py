"""`hone serve` (the API and web UI) and `hone remote --server URL ...` (the CLI against it)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import typer
from rich.markup import escape

from hone.errors import HoneError
from hone.output import (
    DataTable,
    config_text,
    help_settings,
    number,
    output_console,
    percent_gain,
    print_json,
    state_text,
)


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
    remote = typer.Typer(
        help="Talk to a remote `hone serve` (token from HONE_TOKEN or --token-file).",
        no_args_is_help=True,
        **help_settings(),
    )
    remote.callback()(remote_options)
    remote.command("studies")(remote_studies)
    remote.command("show")(remote_show)
    remote.command("stop")(remote_stop)
    remote.command("resume")(remote_resume)
    remote.command("diagnoses")(remote_diagnoses)
    app.add_typer(remote, name="remote")


def cors_origin(text: str) -> str:
    """An --origin as a browser's Origin header spells it (scheme://host[:port], lower case, no
    default port): CORS matches that header letter for letter, so `ui.example.com` or
    `https://ui.example.com/` would match no request and the UI fail without a word why."""
    if text == "*":  # refused before a token is made that would never be shown
        raise typer.BadParameter(
            "a CORS wildcard is refused: name the origins that may call the API"
        )
    origin = text.lower()
    parts = urlsplit(origin)
    try:
        port = parts.port
    except ValueError:
        port = 0
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or "@" in parts.netloc
        or parts.netloc.endswith(":")
        or port == 0
        or origin != f"{parts.scheme}://{parts.netloc}"
    ):
        raise typer.BadParameter(
            f"{text!r} is not an origin: http(s)://host[:port] with no path, as in "
            "https://ui.example.com:8443"
        )
    default = {"http": 80, "https": 443}[parts.scheme]
    return origin.removesuffix(f":{default}") if port == default else origin


def serve(
    host: str = typer.Option("127.0.0.1", help="address to listen on (loopback by default)"),
    port: int = typer.Option(8765, min=1, max=65535, help="TCP port"),
    project: list[Path] = typer.Option(
        None, "--project", help="a project the UI and API may start (repeatable)"
    ),
    token_file: Path = typer.Option(
        None, help="read the token from this file (mode 0600) instead of hone's own"
    ),
    open_reads: bool = typer.Option(
        None,
        "--open-reads/--token-reads",
        help="reads without the token (default: open on loopback, token elsewhere)",
    ),
    origin: list[str] = typer.Option(
        None,
        "--origin",
        help="an origin CORS allows, http(s)://host[:port] (repeatable)",
        parser=cors_origin,
    ),
    storage: str = typer.Option(None, help="SQLAlchemy URL of the study database"),
    tls_cert: Path = typer.Option(None, help="certificate (PEM) to serve HTTPS with"),
    tls_key: Path = typer.Option(None, help="private key (PEM) of --tls-cert"),
    insecure: bool = typer.Option(
        False, help="serve plain HTTP on a non-loopback address (the token travels in clear)"
    ),
) -> None:
    """Serve the REST API and the web UI; state-changing requests need the token."""
    import uvicorn

    from hone.project import load_project
    from hone.project.load import require_trusted
    from hone.serve.app import create_app
    from hone.serve.auth import load_or_create_token, token_path
    from hone.serve.config import ServeConfig

    if bool(tls_cert) != bool(tls_key):
        raise HoneError("--tls-cert and --tls-key go together")
    if tls_cert and tls_key:
        _check_tls(tls_cert, tls_key)
    loopback = ServeConfig(token="", host=host).loopback
    if not loopback and not tls_cert and not insecure:
        raise HoneError(
            f"{host} is not a loopback address: serve HTTPS (--tls-cert, --tls-key) or say"
            " --insecure (the token would travel in clear)"
        )
    path = token_file or token_path()
    if token_file is not None and not token_file.exists():
        raise HoneError("no such token file", file=token_file)
    projects = {}
    for folder in project or []:
        require_trusted(folder)
        loaded = load_project(folder)
        projects[loaded.name] = folder.resolve()
    listening = _listen(host, port)  # before a new token is made and shown
    token, created = load_or_create_token(path)
    config = ServeConfig(
        token=token,
        host=host,
        port=port,
        open_reads=open_reads,
        projects=projects,
        storage=storage,
        origins=list(origin or []),
    )
    app = create_app(config)
    console = output_console()
    if not loopback and not tls_cert:
        console.print("warning: plain HTTP off loopback: the token and the data travel in clear")
    if created:
        console.print(f"token (shown once; stored with mode 0600 in {path}):\n  {token}")
    else:
        console.print(f"token: in {path}")
    reads = "open" if config.reads_open else "need the token"
    scheme = "https" if tls_cert else "http"
    console.print(f"hone serve on {scheme}://{_url_host(host)}:{port}/  (reads {reads})")
    settings = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        ssl_certfile=str(tls_cert) if tls_cert else None,
        ssl_keyfile=str(tls_key) if tls_key else None,
    )
    uvicorn.Server(settings).run(sockets=[listening])


def _listen(host: str, port: int) -> socket.socket:
    """The server's socket, bound before anything is printed: a port in use or an address
    not on this machine ended in uvicorn's error (exit code 3) after the line saying the
    server listened. SO_REUSEADDR as uvicorn sets it (a port in TIME_WAIT is free). The
    protocol named (IPPROTO_TCP, not 0): asyncio turns Nagle off only on connections of such a
    socket, and without it every answer's body waited 40 ms behind its headers."""
    try:
        address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise HoneError(f"cannot listen on {host}: {exc.strerror}") from None
    listening = socket.socket(address[0], socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind(address[4])
    except OSError as exc:
        listening.close()
        raise HoneError(f"cannot listen on {_url_host(host)}:{port}: {exc.strerror}") from None
    return listening


def _check_tls(cert: Path, key: Path) -> None:
    """Load the pair as uvicorn will, before a token is made: a missing file or one that is
    not PEM ended in ssl's traceback after the server said it was listening."""
    import ssl

    for path in (cert, key):
        if not path.is_file():
            raise HoneError("no such file", file=path)
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key)
    except (ssl.SSLError, OSError) as exc:
        reason = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or exc
        raise HoneError(
            f"--tls-cert/--tls-key: not a PEM certificate and its private key ({reason})",
            file=cert,
        ) from None


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


_remote: dict[str, Any] = {}


def remote_options(
    server: str = typer.Option(None, "--server", envvar="HONE_SERVER", help="http://host:port"),
    token_file: Path = typer.Option(None, help="file holding the token (else HONE_TOKEN)"),
) -> None:
    # checked when a command talks to the server: `hone remote studies --help` needs neither
    _remote.update(server=server, token_file=token_file)


def _client() -> Any:
    from hone.serve.remote import RemoteClient, read_token

    if not _remote.get("server"):
        raise HoneError("remote: which server? give --server URL or set HONE_SERVER")
    return RemoteClient(_remote["server"], read_token(_remote["token_file"]))


JSON = typer.Option(False, "--json", help="machine-readable output (the API's own shapes)")


def remote_studies(as_json: bool = JSON) -> None:
    """The studies of the remote server with their state and gain."""
    client = _client()
    rows = client.get("/api/studies")
    if as_json:
        print_json(rows)
        return
    if not rows:  # as `hone studies` says it, not a table of headers alone
        typer.echo(f"no studies on {client.base}")
        return
    table = DataTable("study", "state", "engine", "trials", "failed", "outcome", "gain", "best")
    for row in rows:
        table.add_row(
            row["name"],
            state_text(row["state"], row.get("alive")),
            str(row.get("engine") or ""),
            str(row["trials"]),
            str(row["failures"]),
            str(row.get("outcome") or ""),
            percent_gain(row.get("gain"), row.get("gain_low"), row.get("gain_high")),
            percent_gain(row.get("best_gain")),
        )
    output_console().print(table)


def remote_diagnoses(as_json: bool = JSON) -> None:
    """The diagnoses saved on the remote server, newest first, with their target and verdict."""
    from hone.diagnose.saved import table

    client = _client()
    items = client.get("/api/diagnoses")
    if as_json:
        print_json(items)
        return
    if not items:  # as `hone diagnoses` says it, not a table of headers alone
        typer.echo(f"no saved diagnoses on {client.base}")
        return
    output_console().print(table(items))


def remote_show(
    study: str = typer.Argument(..., help="study name (project#n) or project"),
    as_json: bool = JSON,
) -> None:
    """One remote study: summary, best configuration and its trials."""
    from hone.serve.remote import study_path

    client = _client()
    info = client.get(study_path(study))
    best = client.get(study_path(study, "/best"))
    trials = client.get(study_path(study, "/trials"))
    if as_json:  # the same document as `hone show --json`
        knobs = client.get(study_path(study, "/importance"))
        print_json({"study": info, "best": best, "trials": trials, "knobs": knobs})
        return
    console = output_console()
    console.print(
        f"study [bold]{escape(info['name'])}[/]: {escape(str(info['state']))}, "
        f"engine {escape(str(info.get('engine')))}, "
        f"{info['trials']} trials ({info['failures']} failed)",
        markup=True,
    )
    if best.get("config"):
        console.print(
            f"best ({best['source']}): "
            + config_text(best["config"])
            + f"  gain {percent_gain(best.get('gain'))}",
            markup=False,  # configuration values as given: `[madvise]` is no markup tag
        )
    knobs = sorted({k for t in trials for k in t["config"]})
    table = DataTable("#", "phase", *knobs, "score", "state", "error")
    for trial in trials:
        table.add_row(
            str(trial["number"]),
            trial["phase"],
            *(str(trial["config"].get(k, "")) for k in knobs),
            "" if trial["score"] is None else number(trial["score"]),
            trial["state"],
            trial.get("error") or "",
        )
    console.print(table)


def remote_stop(study: str = typer.Argument(...)) -> None:
    """Stop a running study on the remote server (its knobs are put back)."""
    from hone.serve.remote import study_path

    answer = _client().post(study_path(study, "/stop"))
    typer.echo(f"stopped {answer['stopped']} (pid {answer['pid']})")


def remote_resume(study: str = typer.Argument(...)) -> None:
    """Resume an interrupted study on the remote server."""
    from hone.serve.remote import study_path

    answer = _client().post(study_path(study, "/resume"))
    typer.echo(f"resumed {answer['project']} (pid {answer['pid']})")
