"""Per-turn memory overhead of the graph with the offline model at 1,000 stored memories.

Overhead = the whole `graph.invoke` minus the model calls: ingest, retrieval (query embedding
and search), context assembly, extraction and its writes, summarization when due, and the
SQLite checkpoint writes. Run: `python -m benchmarks.turn_overhead [--turns 200] [--memories 1000]`.
"""

from __future__ import annotations

import argparse
import tempfile
import time

from benchmarks.common import NodeTimer, locomo, locomo_turns, summary, write_result
from mneme.context import Context
from mneme.graph import build_graph
from mneme.home import open_home
from mneme.memory.api import Memory

NODES = {"ingest", "retrieve_memories", "build_context", "agent", "tools", "summarize", "extract_memories"}


def run(turns: int = 200, memories: int = 1000, user: str = "bench") -> dict:
    data = locomo()
    corpus = [t for s in data for t in locomo_turns(s)]
    with tempfile.TemporaryDirectory(prefix="mneme-bench-") as tmp:
        home = open_home(tmp)
        mem = Memory(home.store)
        t0 = time.perf_counter()
        for i in range(0, memories, 100):
            batch = corpus[i : min(i + 100, memories)]
            mem.add(
                [
                    {"role": "user", "content": f"{t['speaker']}: {t['text']}", "id": t["dia_id"]}
                    for t in batch
                ],
                user_id=user,
                infer=False,
                session_id=f"seed-{i}",
            )
        seed_s = time.perf_counter() - t0
        graph = build_graph(model="offline", checkpointer=home.checkpointer(), store=home.store)
        timer = NodeTimer(NODES)
        inputs = [t["text"] for t in corpus[memories : memories + turns]]
        facts = [
            "我不吃辣",
            "麻烦以后都发顺丰",
            "I live in Berlin",
            "my order number is 20240508001",
            "I prefer aisle seats",
        ]
        overhead, total, per_node = [], [], {n: [] for n in NODES}
        ctx = Context(user_id=user)
        for i, text in enumerate(inputs):
            if i % 10 == 0:  # some turns state facts, so extraction writes
                text = facts[(i // 10) % len(facts)] + "。" + text
            thread = f"t{i // 20}"  # sessions of 20 turns
            t1 = time.perf_counter()
            graph.invoke(
                {"messages": [{"role": "user", "content": text}]},
                {"configurable": {"thread_id": thread}, "callbacks": [timer]},
                context=ctx,
            )
            wall = (time.perf_counter() - t1) * 1000
            spent = timer.take()
            model_ms = spent.get("model", 0.0)
            total.append(wall)
            overhead.append(wall - model_ms)
            for n in NODES:
                if n in spent:
                    per_node[n].append(spent[n] - (model_ms if n == "agent" else 0.0))
        home.close()
    return {
        "turns": turns,
        "stored_memories": memories,
        "seed_seconds": round(seed_s, 1),
        "overhead_ms": summary(overhead),
        "invoke_ms": summary(total),
        "per_node_ms": {n: summary(v) for n, v in per_node.items() if v},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--memories", type=int, default=1000)
    args = parser.parse_args()
    result = run(args.turns, args.memories)
    path = write_result("turn_overhead", result)
    print(
        f"overhead per turn: p50 {result['overhead_ms']['p50']} ms, p95 {result['overhead_ms']['p95']} ms -> {path}"
    )
    for node, s in sorted(result["per_node_ms"].items()):
        print(f"  {node:18s} p50 {s['p50']:8.2f} ms   p95 {s['p95']:8.2f} ms")


if __name__ == "__main__":
    main()
