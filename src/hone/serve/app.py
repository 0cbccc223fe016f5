"""The FastAPI application: API routers, the web UI's static files, and the security around them
(token checks, trusted Host headers, no CORS unless origins are named, strict response headers)."""

from __future__ import annotations

from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.middleware.gzip import GZipMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware

from hone import __version__
from hone.errors import HoneError
from hone.serve import studies
from hone.serve.auth import Access
from hone.serve.config import ServeConfig
from hone.serve.deps import access_policy
from hone.serve.gate import Gate
from hone.serve.routers import available
from hone.serve.runs import EventLog, RunManager
from hone.storage import StudyStore

STATIC = Path(__file__).parent / "static"
#: zlib's fastest level: on loopback, where most servers are read, level 6 took 4 times as
#: long for a sixth fewer bytes (docs/benchmarks.md)
GZIP_LEVEL = 1

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


class StrictHeaders:
    """Adds SECURITY_HEADERS to every response that does not set them itself. Plain ASGI, not
    Starlette's BaseHTTPMiddleware, which hides a client's disconnect from the routes (an
    abandoned analysis would run to its end)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                extra = [
                    (k.lower().encode(), v.encode())
                    for k, v in SECURITY_HEADERS.items()
                    if k.lower().encode() not in present
                ]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, with_headers)


def create_app(config: ServeConfig, poll_interval: float = 0.5) -> FastAPI:
    if "*" in config.origins:
        raise HoneError("a CORS wildcard is refused: name the origins that may call the API")
    events = EventLog()
    manager = RunManager(config.projects, events, config.storage)

    @asynccontextmanager
    async def lifespan(app: FastAPI):  # type: ignore[no-untyped-def]
        yield
        manager.shutdown()

    app = FastAPI(
        title="hone",
        version=__version__,
        description="Studies, diagnoses, live metrics and profiles of hone.",
        openapi_url="/api/openapi.json",
        docs_url=None,  # the stock docs pages load scripts from a CDN; the CSP forbids it
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.config = config
    app.state.access = Access(config.token, config.reads_open)
    app.state.store = StudyStore(config.storage)
    app.state.events = events
    app.state.runs = manager
    app.state.poll_interval = poll_interval
    app.state.importance = {}  # (storage, study, trials fingerprint) -> shares

    app.add_middleware(Gate)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=config.allowed_hosts())
    if config.origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=config.origins,
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type"],
        )

    # JSON (10,000 trials: 4 MB) and the UI's files compressed for a client that accepts gzip;
    # event streams are left as they are (Starlette's default exclusion), so events still
    # arrive one by one.
    app.add_middleware(GZipMiddleware, minimum_size=1024, compresslevel=GZIP_LEVEL)
    app.add_middleware(StrictHeaders)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        """422 naming each bad field; the offending input is not echoed back (a NaN in it made
        the stock handler's JSON fail with a 500)."""
        errors = [
            {"loc": [str(p) for p in e.get("loc", ())], "msg": e.get("msg", "")}
            for e in exc.errors()
        ]
        return JSONResponse({"detail": errors}, status_code=422)

    @app.exception_handler(HoneError)
    async def hone_error(request: Request, exc: HoneError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=400)

    # One access policy for every API route; /api/about below is the only open one.
    policy = [Depends(access_policy)]
    app.include_router(studies.router, dependencies=policy)
    optional = available()
    for router in optional:
        app.include_router(router, dependencies=policy)
    app.state.capabilities = {"studies", *(str(r.tags[0]) for r in optional)}

    @app.get("/api/about", tags=["server"])
    def about() -> dict[str, Any]:
        """Version and access policy, so the UI knows whether to ask for the token (open to all:
        it says nothing a caller could not learn by trying)."""
        return {
            "version": __version__,
            "reads_open": config.reads_open,
            "capabilities": sorted(app.state.capabilities),
        }

    if "diagnoses" in app.state.capabilities:
        # The flame graph's script and style, the same files `hone diagnose` embeds in its SVG.
        flame = Path(str(resources.files("hone.diagnose") / "assets"))
        app.mount("/static/flame", StaticFiles(directory=flame), name="flame")
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    return app
