"""A closed-loop load generator: N concurrent clients, each sending its next request when answered."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from benchmarks.common import summary


async def closed_loop(
    call: Callable[[str], Awaitable[None]], queries: list[str], clients: int
) -> dict[str, Any]:
    """Send every query once, `clients` at a time; time each request and the whole run.

    Args:
        call: Sends one query and checks the answer (raises on a bad one).
        queries: The queries, each sent once.
        clients: How many requests are in flight at once.

    Returns:
        Latency p50/p95/mean in ms, requests per second, and the counts.
    """
    pending = list(reversed(queries))
    latencies: list[float] = []

    async def client() -> None:
        while pending:
            query = pending.pop()
            t0 = time.perf_counter()
            await call(query)
            latencies.append((time.perf_counter() - t0) * 1000)

    t0 = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    wall = time.perf_counter() - t0
    return {
        "clients": clients,
        "requests": len(latencies),
        "latency_ms": summary(latencies),
        "requests_per_s": round(len(latencies) / wall, 1),
        "wall_s": round(wall, 2),
    }
