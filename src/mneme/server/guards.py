"""What the HTTP app does before and around every route: size caps, security headers, safe errors."""

from __future__ import annotations

import math
import re
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mneme.validate import MAX_IMPORT_CHARS, MAX_METADATA_CHARS, MAX_REQUEST_CHARS

MAX_BODY_BYTES = 12 * (MAX_REQUEST_CHARS + MAX_METADATA_CHARS)
"""A request body, at most (bytes, about 2.6 MB): the largest `add` even when every character
is sent as a JSON escape (`\\uXXXX`, 12 bytes for a character outside the BMP)."""
MAX_IMPORT_BYTES = 6 * MAX_IMPORT_CHARS
"""The body of `POST /v1/users/{user}/import`, at most (bytes, 60 MB)."""
SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
        "frame-ancestors 'none'"
    ),
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cross-origin-opener-policy": "same-origin",
}
"""Sent with every answer: the admin page runs only its own script and style, in no frame."""

_UNSAFE = re.compile("[\ud800-\udfff]")


def safe(value: Any) -> Any:
    """A value that JSON can always carry: lone surrogates replaced, NaN and infinity as strings."""
    if isinstance(value, str):
        return _UNSAFE.sub("\ufffd", value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {safe(str(k)): safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [safe(v) for v in value]
    if value is None or isinstance(value, bool | int | float):
        return value
    return safe(str(value))


async def validation_error(request: Request, exc: Exception) -> JSONResponse:
    """422 for a body or a parameter that does not validate, without echoing the bad value.

    FastAPI's own answer repeats the input, which fails to serialize when it holds NaN or a
    lone surrogate (a 500 instead of the 422).
    """
    errors = exc.errors() if isinstance(exc, RequestValidationError) else []
    detail = [
        {"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": e.get("type")} for e in errors
    ]
    return JSONResponse({"detail": safe(detail)}, status_code=422)


async def too_deep(request: Request, exc: Exception) -> JSONResponse:
    """400 for a JSON body nested too deeply for the parser."""
    return JSONResponse({"detail": "the JSON body is nested too deeply"}, status_code=400)


class Guards:
    """ASGI middleware: security headers on every answer, and a body size cap before any work.

    A body over its cap (`MAX_BODY_BYTES`, or `MAX_IMPORT_BYTES` for an import) is answered
    with 413 as soon as its `Content-Length` says so, or as soon as that many bytes arrived,
    before any route runs.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one connection event (HTTP requests get the caps and the headers)."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {k.lower() for k, _ in headers}
                headers += [
                    (k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items() if k.encode() not in present
                ]
                message = {**message, "headers": headers}
            await send(message)

        limit = MAX_IMPORT_BYTES if str(scope.get("path", "")).endswith("/import") else MAX_BODY_BYTES
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await _too_large(send_with_headers, limit)
            return
        # The whole body is read (up to its cap) before the app sees any of it.
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay([], message), send_with_headers)
                return
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > limit:
                await _too_large(send_with_headers, limit)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        await self.app(scope, _replay(chunks, None, receive), send_with_headers)


def _replay(chunks: list[bytes], last: Message | None, receive: Receive | None = None) -> Receive:
    """A `receive` that gives the body read already, then waits for a disconnect."""
    pending: list[Message] = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]
    if last is not None:
        pending = [last]

    async def replayed() -> Message:
        if pending:
            return pending.pop(0)
        if receive is None:
            return {"type": "http.disconnect"}
        return await receive()

    return replayed


async def _too_large(send: Send, limit: int) -> None:
    body = f'{{"detail":"the request body may be at most {limit:,} bytes"}}'.encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


__all__ = [
    "MAX_BODY_BYTES",
    "MAX_IMPORT_BYTES",
    "SECURITY_HEADERS",
    "Guards",
    "safe",
    "too_deep",
    "validation_error",
]
