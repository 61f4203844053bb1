"""`create_app`: the FastAPI app serving the REST routes, `/healthz` and the admin page."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import metadata
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from mneme.errors import (
    ConfigError,
    HomeLockedError,
    InputError,
    MnemeError,
    NotFoundError,
    RateLimited,
    ShuttingDown,
)
from mneme.server.auth import KeyRing
from mneme.server.backend import Backend
from mneme.server.guards import Guards, safe, too_deep, validation_error
from mneme.server.ratelimit import RateLimiter
from mneme.server.routes import router
from mneme.server.schemas import Health

STATIC = Path(__file__).with_name("static")

_STATUS: list[tuple[type[MnemeError], int]] = [
    (InputError, 422),
    (NotFoundError, 404),
    (HomeLockedError, 503),
    (ShuttingDown, 503),
    (RateLimited, 429),
    (ConfigError, 500),
    (MnemeError, 400),
]


async def _mneme_error(request: Request, exc: Exception) -> JSONResponse:
    """One JSON line for an error mneme raised on purpose (bad input, unknown id, ...)."""
    code = next((c for cls, c in _STATUS if isinstance(exc, cls)), 400)
    headers = None
    if isinstance(exc, RateLimited):
        headers = {"Retry-After": str(max(1, math.ceil(exc.retry_after)))}
    elif isinstance(exc, ShuttingDown):
        headers = {"Retry-After": "5"}
    return JSONResponse({"detail": safe(str(exc).removeprefix("mneme: "))}, status_code=code, headers=headers)


def _version() -> str:
    try:
        return metadata.version("mneme")
    except metadata.PackageNotFoundError:
        return "unknown"


def create_app(
    backend: Backend, *, keys: KeyRing | None = None, rate_limit: RateLimiter | None = None
) -> FastAPI:
    """The HTTP app over one memory backend.

    Args:
        backend: Where memories live (`HomeBackend` for `mneme serve`,
            `LangGraphServerBackend` inside the LangGraph server).
        keys: Accepted API keys (default: from `MNEME_API_KEY` / `MNEME_API_KEYS`).
        rate_limit: Requests allowed per key and per user (default: from `MNEME_RATE_LIMIT`,
            see `RateLimiter`).

    Returns:
        A FastAPI app: `/v1/...` REST routes, `/healthz`, and the admin page at `/admin`.
        Every answer carries security headers (`guards.SECURITY_HEADERS`); a body over its
        cap is refused with 413 before any route runs; bad input gets a 4xx with a message.
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        await backend.close()

    app = FastAPI(
        title="mneme",
        version=_version(),
        summary="Long-term memory of LangGraph agents: see, correct, delete and export it.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url="/v1/openapi.json",
    )
    app.state.mneme_backend = backend
    app.state.mneme_keys = keys if keys is not None else KeyRing.from_env()
    app.state.mneme_rate = rate_limit if rate_limit is not None else RateLimiter.from_env()
    for cls, _ in _STATUS:
        app.add_exception_handler(cls, _mneme_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(RecursionError, too_deep)
    app.add_middleware(Guards)
    app.include_router(router)

    @app.get("/healthz", response_model=Health, tags=["health"])
    async def healthz() -> Health:
        """Liveness: the app answers (no key needed)."""
        return Health(status="ok", version=_version())

    @app.get("/admin", include_in_schema=False)
    async def admin() -> FileResponse:
        """The admin page (the API key is typed into the page, never put in the URL)."""
        return FileResponse(STATIC / "admin.html", headers={"Cache-Control": "no-store"})

    app.mount("/admin/static", StaticFiles(directory=STATIC), name="admin-static")
    return app


def app_from_env() -> FastAPI:
    """The app of one `mneme serve --workers N` process, configured by the environment.

    `MNEME_POSTGRES_URL` or `MNEME_CHROMA_URL` names the shared store (`MNEME_HOME` the folder
    for anything local), `MNEME_API_KEY` / `MNEME_API_KEYS` the keys; the store is opened at
    start, so a worker that cannot reach it fails at once.
    """
    import os

    from mneme.server.backend import HomeBackend

    backend = HomeBackend(
        os.environ.get("MNEME_HOME") or None,
        chroma_url=os.environ.get("MNEME_CHROMA_URL") or None,
        postgres=os.environ.get("MNEME_POSTGRES_URL") or None,
    )
    backend.open_now()
    return create_app(backend, keys=KeyRing.from_env())


__all__ = ["app_from_env", "create_app"]
