"""Write-path throughput of `Memory.add` on LoCoMo turns, with and without inference, and the gate.

- `infer=False`: every turn stored verbatim, 200 per call, document vectors from the benchmark
  cache, so the figure is the store's cost alone; the E5 passage rate measured on uncached
  turns gives the embedding cost, and both combine into the end-to-end rate.
- `infer=True`: one call per turn (as the graph does per user turn) with the offline
  rule-based extractor and the real, uncached embedding model: extraction, redaction,
  reconciliation against similar memories, and the writes.
- The gate: the share of turns that the extraction gate (`mneme.memory.gate`) would send to
  an LLM extractor when a real model is configured, over every LoCoMo turn.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from benchmarks.locomo import Conversation
from benchmarks.peers.base import turn_items
from benchmarks.systems import cached_local
from mneme.embeddings import LocalEmbeddings
from mneme.memory.api import Memory
from mneme.store.chroma import ChromaStore

BATCH = 200


def gate_share(convs: list[Conversation]) -> dict[str, Any]:
    """Share of all turns the extraction gate sends to an LLM, with the reasons."""
    try:
        from mneme.memory.gate import gate
    except ImportError:  # the gate is part of the write path; report what exists
        return {"skipped": "mneme.memory.gate is not in this build"}
    reasons: Counter[str] = Counter()
    sent = 0
    turns = [t["text"] for c in convs for t in c.turns]
    t0 = time.perf_counter()
    for text in turns:
        decision = gate(text)
        sent += decision.send
        reasons[decision.reason] += 1
    elapsed = time.perf_counter() - t0
    return {
        "turns": len(turns),
        "sent_to_llm": sent,
        "sent_share": round(sent / len(turns), 4) if turns else None,
        "reasons": dict(reasons.most_common()),
        "gate_us_per_turn": round(elapsed / len(turns) * 1e6, 1) if turns else None,
    }


def verbatim_rate(convs: list[Conversation]) -> dict[str, Any]:
    """`Memory.add(infer=False)`: store-only rate (cached vectors), E5 rate, and both together."""
    with tempfile.TemporaryDirectory(prefix="mneme-ingest-") as tmp:
        store = ChromaStore.open(tmp, index={"embed": cached_local(), "dims": 384, "fields": ["text"]})
        memory = Memory(store)
        n = 0
        t0 = time.perf_counter()
        for conv in convs:
            batch = [{"role": "user", "content": text, "id": key} for key, text in turn_items(conv)]
            for i in range(0, len(batch), BATCH):
                memory.add(batch[i : i + BATCH], user_id=conv.conv_id, infer=False, session_id=conv.conv_id)
            n += len(batch)
        store_s = time.perf_counter() - t0
    sample = [text for _, text in turn_items(convs[0])][:100]
    model = LocalEmbeddings()
    model.embed_documents(sample[:2])  # load the model outside the timing
    t1 = time.perf_counter()
    model.embed_documents(sample)
    embed_s = time.perf_counter() - t1
    store_rate = n / store_s
    embed_rate = len(sample) / embed_s
    return {
        "turns": n,
        "store_only_per_s": round(store_rate, 1),
        "e5_passages_per_s": round(embed_rate, 1),
        "end_to_end_per_s": round(1 / (1 / store_rate + 1 / embed_rate), 1),
    }


def inferred_rate(
    convs: list[Conversation], turns: int, progress: Callable[[float], None] = lambda f: None
) -> dict[str, Any]:
    """`Memory.add(infer=True)` with the offline extractor, one call per turn, uncached embeddings."""
    texts = [(c.conv_id, t["speaker"], t["text"]) for c in convs for t in c.turns][:turns]
    ops: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="mneme-ingest-") as tmp:
        store = ChromaStore.open(tmp, index={"embed": LocalEmbeddings(), "dims": 384, "fields": ["text"]})
        memory = Memory(store, model="offline")
        memory.add("warm-up: I like tea", user_id="warm-up")
        t0 = time.perf_counter()
        for i, (conv, speaker, text) in enumerate(texts):
            for change in memory.add(text, user_id=f"{conv}-{speaker}", session_id=conv):
                ops[change.operation] += 1
            progress((i + 1) / len(texts))
        elapsed = time.perf_counter() - t0
    return {
        "turns": len(texts),
        "per_s": round(len(texts) / elapsed, 1),
        "ms_per_turn": round(elapsed / len(texts) * 1000, 1),
        "changes": dict(ops.most_common()),
    }
