"""REST search latency and throughput: `mneme serve` on loopback, 16 concurrent clients, 10,000 memories.

Run: `python -m benchmarks.rest_latency [--quick]`. The server is the real `mneme serve`
process on a copy of a home holding 10,000 memories of one user (LoCoMo texts, see
`benchmarks/serving_corpus.py`); clients send `GET /v1/users/U/memories?q=...&limit=10` with
a query never sent before, so every request embeds its query with the local model.
Writes `benchmarks/results/rest_latency.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common import write_result
from benchmarks.loadgen import closed_loop
from benchmarks.serving_corpus import USER, build_home

KEY = "benchmark-key-0001"


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(home: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    exe = Path(sys.executable).with_name("mneme")
    env = {**os.environ, "MNEME_API_KEY": KEY, "MNEME_RATE_LIMIT": "off"}  # measure the server, not the limit
    out = log.open("wb")
    proc = subprocess.Popen(
        [str(exe), "serve", "--host", "127.0.0.1", "--port", str(port), "--home", str(home)],
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"mneme serve exited: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=2):
                return proc, url
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                raise SystemExit("mneme serve did not start") from None
            time.sleep(0.3)


async def measure(url: str, queries: list[str], clients: int, single: int, warmup: int) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {KEY}"}, timeout=120, limits=limits
    ) as http:

        async def search(query: str) -> None:
            resp = await http.get(f"/v1/users/{USER}/memories", params={"q": query, "limit": 10})
            resp.raise_for_status()
            if not resp.json()["items"]:
                raise RuntimeError(f"no hits for {query!r}")

        await closed_loop(search, queries[:warmup], 4)  # model, caches and connections warm
        one = await closed_loop(search, queries[warmup : warmup + single], 1)
        many = await closed_loop(search, queries[warmup + single :], clients)
    return {"single_client": one, "concurrent": many}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=800, help="requests with all clients running")
    parser.add_argument("--quick", action="store_true", help="2,000 memories, 160 requests")
    args = parser.parse_args(argv)
    if args.quick:
        args.memories, args.requests = 2_000, 160
    single, warmup = 48, 16
    load_start = os.getloadavg()[0]

    print(f"building (or reusing) a home with {args.memories} memories ...", flush=True)
    built_home, queries, built = build_home(args.memories)
    queries = queries[: warmup + single + args.requests]
    if len(queries) < warmup + single + args.requests:
        raise SystemExit(f"only {len(queries)} unseen queries for {warmup + single + args.requests} requests")

    with tempfile.TemporaryDirectory(prefix="mneme-rest-bench-") as tmp:
        home = Path(tmp) / "home"
        shutil.copytree(built_home, home)  # searches may record use; keep the cached home as built
        proc, url = start_server(home, Path(tmp) / "serve.log")
        try:
            print(f"measuring {url}: {args.clients} clients, {args.requests} requests ...", flush=True)
            figures = asyncio.run(measure(url, queries, args.clients, single, warmup))
        finally:
            proc.terminate()
            proc.wait(timeout=30)

    result = {
        "stored_memories": built["memories"],
        "route": "GET /v1/users/{user}/memories?q=...&limit=10",
        "server": "mneme serve (uvicorn, one process), embedded Chroma home, local E5 model",
        **figures,
        "load_average": {"start": round(load_start, 2), "end": round(os.getloadavg()[0], 2)},
    }
    path = write_result("rest_latency", result)
    c, s = figures["concurrent"], figures["single_client"]
    print(
        f"REST search at {built['memories']} memories: {c['clients']} clients p50 {c['latency_ms']['p50']} ms, "
        f"p95 {c['latency_ms']['p95']} ms, {c['requests_per_s']} req/s; one client p50 "
        f"{s['latency_ms']['p50']} ms  → {path}"
    )


if __name__ == "__main__":
    main()
