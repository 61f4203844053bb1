"""MCP `search_memory` latency and throughput: `mneme mcp` over stdio, 16 concurrent calls, 10,000 memories.

Run: `python -m benchmarks.mcp_latency [--quick]`. The server is the real `mneme mcp --user U`
process on a copy of a home holding 10,000 memories of that user (see
`benchmarks/serving_corpus.py`). A stdio MCP server serves exactly one client, so "16
concurrent clients" are 16 callers sharing that client session, each sending its next
`search_memory` call (limit 10, a query never sent before) when the last one is answered.
Writes `benchmarks/results/mcp_latency.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from benchmarks.common import write_result
from benchmarks.loadgen import closed_loop
from benchmarks.serving_corpus import USER, build_home


async def measure(home: Path, queries: list[str], clients: int, single: int, warmup: int) -> dict[str, Any]:
    exe = str(Path(sys.executable).with_name("mneme"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEME_")}
    params = StdioServerParameters(command=exe, args=["mcp", "--user", USER, "--home", str(home)], env=env)
    async with Client(params, read_timeout_seconds=120) as client:

        async def search(query: str) -> None:
            result = await client.call_tool("search_memory", {"query": query, "limit": 10})
            if result.is_error or not (result.structured_content or {}).get("items"):
                raise RuntimeError(f"search_memory failed for {query!r}: {result.content}")

        await closed_loop(search, queries[:warmup], 4)
        one = await closed_loop(search, queries[warmup : warmup + single], 1)
        many = await closed_loop(search, queries[warmup + single :], clients)
    return {"single_client": one, "concurrent": many}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=800, help="calls with all callers running")
    parser.add_argument("--quick", action="store_true", help="2,000 memories, 160 calls")
    args = parser.parse_args(argv)
    if args.quick:
        args.memories, args.requests = 2_000, 160
    single, warmup = 48, 16
    load_start = os.getloadavg()[0]

    print(f"building (or reusing) a home with {args.memories} memories ...", flush=True)
    built_home, queries, built = build_home(args.memories)
    queries = queries[: warmup + single + args.requests]
    if len(queries) < warmup + single + args.requests:
        raise SystemExit(f"only {len(queries)} unseen queries for {warmup + single + args.requests} calls")

    with tempfile.TemporaryDirectory(prefix="mneme-mcp-bench-") as tmp:
        home = Path(tmp) / "home"
        shutil.copytree(built_home, home)
        print(
            f"measuring mneme mcp: {args.clients} concurrent callers, {args.requests} calls ...", flush=True
        )
        figures = asyncio.run(measure(home, queries, args.clients, single, warmup))

    result = {
        "stored_memories": built["memories"],
        "tool": "search_memory(query, limit=10)",
        "server": "mneme mcp --user U over stdio (one process, one client session), embedded Chroma, local E5",
        **figures,
        "load_average": {"start": round(load_start, 2), "end": round(os.getloadavg()[0], 2)},
    }
    path = write_result("mcp_latency", result)
    c, s = figures["concurrent"], figures["single_client"]
    print(
        f"MCP search at {built['memories']} memories: {c['clients']} callers p50 {c['latency_ms']['p50']} ms, "
        f"p95 {c['latency_ms']['p95']} ms, {c['requests_per_s']} calls/s; one caller p50 "
        f"{s['latency_ms']['p50']} ms  → {path}"
    )


if __name__ == "__main__":
    main()
