"""A guard that refuses and counts every network connection a benchmarked system attempts.

Peers such as mem0 build HTTP clients (OpenAI, PostHog) at start-up; the benchmark must
prove that none of them is used. The guard wraps `socket.socket.connect` (and the address
lookup) in the worker process: a connection to anything but a local socket or loopback
raises `ConnectionRefusedError` and is counted, and the count is reported with the figures.
"""

from __future__ import annotations

import socket
from typing import Any

_attempts: list[str] = []
_installed = False
_LOCAL = ("127.", "::1", "localhost", "0.0.0.0")


def _is_local(address: Any) -> bool:
    if isinstance(address, str | bytes):  # AF_UNIX path
        return True
    host = str(address[0]) if isinstance(address, tuple) and address else str(address)
    return host.startswith(_LOCAL)


def install() -> None:
    """Refuse non-local connections from now on in this process (idempotent)."""
    global _installed
    if _installed:
        return
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        if not _is_local(address):
            _attempts.append(f"connect {address!r}")
            raise ConnectionRefusedError(f"benchmark: network disabled (connect to {address!r})")
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if not _is_local(address):
            _attempts.append(f"connect {address!r}")
            return 111  # ECONNREFUSED
        return real_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not _is_local((host,)):
            _attempts.append(f"resolve {host!r}")
            raise socket.gaierror(f"benchmark: network disabled (lookup of {host!r})")
        return real_getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = getaddrinfo
    _installed = True


def attempts() -> list[str]:
    """Every refused connection or lookup so far, in order."""
    return list(_attempts)
