"""Search latency and add throughput of one system as one user's memories grow to 100,000.

At each size (1,000, 10,000, 100,000):

1. fill: the store is brought to `size - probe` texts through the system's bulk path (its
   own add in large batches; mem0: its vector store's batch insert with the payload that
   `Memory.add` writes, because mem0 adds one text per call);
2. add: the last `probe` texts are added through the system's ordinary add path, timed:
   `add_per_s`;
3. search: one first question, timed apart (`first_search_ms`: it pays for any index a
   system builds lazily after adds), then distinct LoCoMo questions (embedded by the real model at search time, never
   cached) are searched with k = 10 (50, or 30 at 100,000, each variant stopping after 45 s
   once it has asked 10), each timed: `search_ms_p50` / `search_ms_p95`. Every
   search variant on the same store (mneme and mneme-dense; LangGraph's store and LangMem's
   tool over it) gets its own questions.

Texts and vectors come from `benchmarks.scale_corpus` (real LoCoMo turns, then pairs of
turns with the normalized sum of their real vectors).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from benchmarks.common import summary
from benchmarks.peers.base import TextSystem
from benchmarks.scale_corpus import ScaleCorpus

USER = "scale-user"
SIZES = (1_000, 10_000, 100_000)
QUICK_SIZES = (1_000, 10_000)
K = 10

Search = Callable[[str, str, int], list[str]]


QUESTION_BUDGET_S = 45.0
"""A variant stops asking questions at a size after this long (but asks at least `MIN_QUESTIONS`):
brute-force peers take seconds per search at 100,000 memories."""
MIN_QUESTIONS = 10


def queries_for(size: int) -> int:
    """Questions asked per variant at a size (fewer at 100,000, where brute-force peers take seconds)."""
    return 30 if size >= 100_000 else 50


def run(
    system: TextSystem,
    variants: dict[str, Search],
    corpus: ScaleCorpus,
    sizes: tuple[int, ...],
    *,
    fill: Callable[[list[tuple[str, str]]], None] | None = None,
    probe: int = 500,
    queries: Callable[[int], int] = queries_for,
    progress: Callable[[float], None] = lambda f: None,
) -> dict[str, Any]:
    """Measure one system (and the search variants over its store) at growing sizes.

    Args:
        system: The system; its store grows across the sizes.
        variants: Name -> search function over the same store.
        corpus: Texts, vectors and questions.
        sizes: Increasing sizes.
        fill: Bulk path `(items) -> None` for the fill step (default: `system.add_texts`).
        probe: How many texts the timed add step adds at each size.
        queries: Questions per variant at a size.
        progress: Called with the fraction done (0..1).

    Returns:
        `{variant: {size: {...}}}` with `add_per_s`, `fill_per_s`, `search_ms_p50/p95`.
    """
    items = list(zip(corpus.keys, corpus.texts, strict=True))
    bulk = fill or (lambda chunk: system.add_texts(USER, chunk))
    out: dict[str, Any] = {name: {} for name in variants}
    stored = 0
    asked = 0
    total_work = sum(sizes) + sum(queries(s) * len(variants) * 20 for s in sizes)
    done = 0
    for size in sizes:
        target = max(stored, size - probe)
        t0 = time.perf_counter()
        for i in range(stored, target, 1_000):
            bulk(items[i : min(i + 1_000, target)])
            done += min(i + 1_000, target) - i
            progress(done / total_work)
        fill_s = time.perf_counter() - t0
        filled = target - stored
        t1 = time.perf_counter()
        system.add_texts(USER, items[target:size])
        add_s = time.perf_counter() - t1
        done += size - target
        stored = size
        for name, search in variants.items():
            n = queries(size)
            warm_up, questions = corpus.questions[asked], corpus.questions[asked + 1 : asked + 1 + n]
            asked += n + 1
            t_first = time.perf_counter()
            search(USER, warm_up, K)  # catches up any index built lazily after the adds: timed apart
            first_ms = (time.perf_counter() - t_first) * 1000
            latencies: list[float] = []
            found = 0
            started = time.perf_counter()
            for q in questions:
                if len(latencies) >= MIN_QUESTIONS and time.perf_counter() - started > QUESTION_BUDGET_S:
                    done += 20 * (len(questions) - len(latencies))
                    break
                t2 = time.perf_counter()
                keys = search(USER, q, K)
                latencies.append((time.perf_counter() - t2) * 1000)
                found += bool(keys)
                done += 20
                progress(done / total_work)
            lat = summary(latencies)
            out[name][str(size)] = {
                "memories": size,
                "add_per_s": round((size - target) / add_s, 1) if add_s > 0 else None,
                "fill_per_s": round(filled / fill_s, 1) if filled and fill_s > 0 else None,
                "search_ms_p50": lat["p50"],
                "search_ms_p95": lat["p95"],
                "first_search_ms": round(first_ms, 1),
                "queries": len(latencies),
                "queries_with_hits": found,
            }
    return out
