"""Postgres vs SQLite + Chroma in the same run: search, writes, turns, REST with 1 and 2 workers, visibility.

For each back end (the embedded home: Chroma on disk + SQLite checkpoints; a Postgres with
pgvector from the `pgserver` wheel: `PostgresStore` + `PostgresSaver`), at 10,000 memories of one
user (LoCoMo texts, `serving_corpus.texts_and_queries`):

- `Memory.search` p50/p95 over unseen queries (each embeds its query with the local model; the
  seeded memories' vectors come from the benchmark's embedding cache);
- `Memory.add(infer=False)` one message at a time (how a chat app writes), writes/s;
- `Memory.add` with the offline extractor, one message at a time, calls/s;
- per-turn graph overhead with the offline model (the whole invoke minus the model call);
- REST search throughput and latency, 16 clients, `mneme serve` with 1 worker, and with 2
  (`--workers 2`, Postgres only: an embedded home belongs to one process);
- cross-process visibility: a write acknowledged in this process, polled for by a search in
  another (Postgres; and a Chroma server, the other shared store), delay p50/p95.

Run: `python -m benchmarks.production [--memories 10000] [--quick]`.
Writes `benchmarks/results/production.json`.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as `mneme serve` does

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path
from typing import Any

from benchmarks.common import NodeTimer, summary, write_result
from benchmarks.rest_latency import KEY, free_port
from benchmarks.serving_corpus import USER, texts_and_queries
from benchmarks.systems import cached_local
from mneme.context import Context
from mneme.graph import build_graph
from mneme.home import open_home
from mneme.memory.api import Memory

NODES = {"ingest", "retrieve_memories", "build_context", "agent", "tools", "summarize", "extract_memories"}


def seed(mem: Memory, texts: list[str]) -> float:
    t0 = time.perf_counter()
    for i in range(0, len(texts), 100):
        batch = [
            {"role": "user", "content": t, "id": f"seed-{i + j}"} for j, t in enumerate(texts[i : i + 100])
        ]
        mem.add(batch, user_id=USER, infer=False, session_id=f"seed-{i // 100}")
    return time.perf_counter() - t0


def searches(mem: Memory, queries: list[str]) -> dict[str, Any]:
    mem.search(queries[0], user_id=USER, limit=10)  # the index loads once
    times = []
    for q in queries[1:]:
        t0 = time.perf_counter()
        mem.search(q, user_id=USER, limit=10)
        times.append((time.perf_counter() - t0) * 1000)
    return {"queries": len(times), "ms": summary(times)}


def writes(mem: Memory, texts: list[str], *, infer: bool) -> dict[str, Any]:
    times = []
    t0 = time.perf_counter()
    for i, text in enumerate(texts):
        t1 = time.perf_counter()
        mem.add(
            {"role": "user", "content": text, "id": f"w{infer}-{i}"},
            user_id="writer",
            infer=infer,
            session_id="w",
        )
        times.append((time.perf_counter() - t1) * 1000)
    wall = time.perf_counter() - t0
    return {"calls": len(texts), "per_s": round(len(texts) / wall, 1), "ms": summary(times)}


def turns(home: Any, inputs: list[str]) -> dict[str, Any]:
    graph = build_graph(model="offline", checkpointer=home.checkpointer(), store=home.store)
    timer = NodeTimer(NODES)
    overhead = []
    ctx = Context(user_id=USER)
    for i, text in enumerate(inputs):
        t0 = time.perf_counter()
        graph.invoke(
            {"messages": [{"role": "user", "content": text}]},
            {"configurable": {"thread_id": f"bench-t{i // 10}"}, "callbacks": [timer]},
            context=ctx,
        )
        wall = (time.perf_counter() - t0) * 1000
        overhead.append(wall - timer.take().get("model", 0.0))
    return {"turns": len(inputs), "overhead_ms": summary(overhead[2:])}


def rest(args: list[str], queries: list[str], log: Path) -> dict[str, Any]:
    from benchmarks.loadgen import closed_loop

    port = free_port()
    env = {**os.environ, "MNEME_API_KEY": KEY}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mneme.cli", "serve", "--port", str(port), *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"mneme serve exited: {log.read_text()[-2000:]}")
            try:
                urllib.request.urlopen(url + "/healthz", timeout=2).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("mneme serve did not start") from None
                time.sleep(0.3)
        import httpx

        async def go() -> dict[str, Any]:
            limits = httpx.Limits(max_connections=16, max_keepalive_connections=16)
            async with httpx.AsyncClient(
                base_url=url, headers={"Authorization": f"Bearer {KEY}"}, timeout=300, limits=limits
            ) as http:

                async def search(query: str) -> None:
                    resp = await http.get(f"/v1/users/{USER}/memories", params={"q": query, "limit": 10})
                    resp.raise_for_status()

                await closed_loop(search, queries[:32], 16)  # every worker loads its index
                return await closed_loop(search, queries[32:], 16)

        return asyncio.run(go())
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


PROBE = textwrap.dedent(
    """
    import json, sys, time
    from mneme import Memory
    mem = Memory.open(sys.argv[2] if len(sys.argv) > 2 else None, **json.loads(sys.argv[1]))
    mem.search("warm up", user_id="vis")
    print("ready", flush=True)
    for line in sys.stdin:
        text = line.strip()
        while not any(h.text == text for h in mem.search(text, user_id="vis", limit=3)):
            pass
        print(time.monotonic(), flush=True)
    """
)


def visibility(shared: dict[str, str], workdir: Path, probes: int) -> dict[str, Any]:
    """Delay from a write acknowledged here to a search in another process finding it."""
    mem = Memory.open(workdir / "writer", **shared)
    mem.add("warm up the visibility probe", user_id="vis", infer=False)
    proc = subprocess.Popen(
        [sys.executable, "-c", PROBE, json.dumps(shared), str(workdir / "reader")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        assert proc.stdout.readline().strip() == "ready"
        delays = []
        for i in range(probes):
            text = f"visibility probe {i}: the blue door code is {4000 + i}"
            proc.stdin.write(text + "\n")
            proc.stdin.flush()
            time.sleep(0.05)  # the reader is already searching when the write lands
            mem.add(text, user_id="vis", infer=False)
            acked = time.monotonic()
            found = float(proc.stdout.readline())
            delays.append(max(0.0, (found - acked) * 1000))
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
        mem.close()
    return {"probes": probes, "delay_ms": summary(delays), "max_ms": round(max(delays), 1)}


def chroma_server(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cli = Path(sys.executable).parent / "chroma"
    proc = subprocess.Popen(
        [str(cli), "run", "--path", str(folder), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1).read()
            return proc, url
        except OSError:
            time.sleep(0.2)
    raise SystemExit("chroma run did not start")


def backend(
    name: str, spec: dict[str, str], texts: list[str], queries: list[str], tmp: Path, n: dict[str, int]
) -> dict[str, Any]:
    # The seed's passages come from the benchmark cache after the first back end embedded them
    # (same model); every other text and every query is embedded for real.
    home = open_home(spec.get("home"), postgres=spec.get("postgres"), embeddings=cached_local())
    mem = Memory(home.store, owner=home)
    out: dict[str, Any] = {"load_before": [round(x, 2) for x in os.getloadavg()]}
    out["seed_s"] = round(seed(mem, texts), 1)
    q = iter(queries)
    out["search"] = searches(mem, [next(q) for _ in range(n["searches"] + 1)])
    new = [f"note {i}: {t}" for i, t in enumerate(queries[-n["writes"] :])]
    out["add_verbatim"] = writes(mem, new, infer=False)
    out["add_offline_extractor"] = writes(
        mem, [f"我住在{i}号楼，我喜欢喝{i}号茶" for i in range(n["writes"] // 2)], infer=True
    )
    out["turn"] = turns(home, [next(q) for _ in range(n["turns"])])
    home.close()
    rest_queries = [next(q) for _ in range(n["rest"] + 32)]
    if "postgres" in spec:
        out["rest_1_worker"] = rest(["--postgres", spec["postgres"]], rest_queries, tmp / f"{name}-1.log")
        out["rest_2_workers"] = rest(
            ["--postgres", spec["postgres"], "--workers", "2"], rest_queries, tmp / f"{name}-2.log"
        )
    else:
        out["rest_1_worker"] = rest(["--home", spec["home"]], rest_queries, tmp / f"{name}-1.log")
    out["load_after"] = [round(x, 2) for x in os.getloadavg()]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--backends", default="sqlite_chroma,postgres", help="which to run (comma-separated), and visibility"
    )
    args = parser.parse_args()
    n = {"searches": 60, "writes": 60, "turns": 30, "rest": 160, "probes": 30}
    if args.quick:
        n = {"searches": 20, "writes": 20, "turns": 8, "rest": 48, "probes": 10}
    import pgserver

    texts, queries = texts_and_queries(args.memories)
    result: dict[str, Any] = {"memories": len(texts), "counts": n}
    with tempfile.TemporaryDirectory(prefix="mneme-prod-") as tmp_s:
        tmp = Path(tmp_s)
        server = pgserver.get_server(tmp / "pg", cleanup_mode="stop")
        try:
            url = server.get_uri()
            chosen = args.backends.split(",")
            if "sqlite_chroma" in chosen:
                result["sqlite_chroma"] = backend(
                    "sqlite", {"home": str(tmp / "home")}, texts, queries, tmp, n
                )
                print(json.dumps({"sqlite_chroma": result["sqlite_chroma"]}), flush=True)
            if "postgres" in chosen:
                result["postgres"] = backend("postgres", {"postgres": url}, texts, queries, tmp, n)
                print(json.dumps({"postgres": result["postgres"]}), flush=True)
            result["visibility_postgres"] = visibility({"postgres": url}, tmp / "vis-pg", n["probes"])
            chroma, curl = chroma_server(tmp / "chroma-server")
            try:
                result["visibility_chroma_server"] = visibility(
                    {"chroma_url": curl}, tmp / "vis-ch", n["probes"]
                )
            finally:
                chroma.terminate()
                chroma.wait(timeout=30)
        finally:
            server.cleanup()
    print(json.dumps({k: v for k, v in result.items() if k.startswith("visibility")}))
    print(
        f"written to {write_result('production' if len(args.backends.split(',')) > 1 else 'production_' + args.backends, result)}"
    )


if __name__ == "__main__":
    main()
