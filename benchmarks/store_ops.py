"""ChromaStore against LangGraph's InMemoryStore on the two loads LangGraph's store suites found slow.

1. A search with no query over a prefix that spans several namespaces: 10,000 items in 10
   namespaces, `search(("bench",), limit=10)` (and at offset 5,000, and with a filter).
2. 60,000 concurrent async calls (the pattern of LangGraph's `test_large_batches_async`:
   put, get, list namespaces, search, put, delete for 1,000 keys x 10 rounds).

Run with this checkout's `src` first on the path for the figures after, and with an older
checkout's `src` for the figures before (the store is whatever `mneme` imports).
Run: `python -m benchmarks.store_ops [--items 10000] [--label after]`.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from typing import Any

from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore

import mneme
from benchmarks.common import write_result
from mneme.store.chroma import ChromaStore

SPACES = 10


def fill(store: BaseStore, items: int) -> None:
    per = items // SPACES
    for s in range(SPACES):
        ns = ("bench", f"user{s}")
        for start in range(0, per, 1_000):
            store.batch(
                [
                    PutOp(ns, f"k{i}", {"text": f"item {i}", "n": i, "tags": ["a"]}, index=False)
                    for i in range(start, min(start + 1_000, per))
                ]
            )


def timed(fn: Any, runs: int) -> dict[str, float]:
    fn()  # warm
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return {
        "p50_ms": round(statistics.median(times), 2),
        "p95_ms": round(times[int(0.95 * (len(times) - 1))], 2),
    }


def listing(store: BaseStore, runs: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, kwargs in {
        "limit=10": {"limit": 10},
        "limit=10 offset=5000": {"limit": 10, "offset": 5_000},
        "limit=10 filter n>=900": {"limit": 10, "filter": {"n": {"$gte": 900}}},
    }.items():
        try:
            got = store.search(("bench",), **kwargs)
            out[name] = {
                **timed(lambda kw=kwargs: store.search(("bench",), **kw), runs),
                "returned": len(got),
            }
        except Exception as exc:  # an older store refuses some filters
            out[name] = {"error": f"{type(exc).__name__}: {exc}"[:200]}
    return out


async def many_calls(store: BaseStore, n: int = 1_000, m: int = 10) -> float:
    coros = []
    for r in range(m):
        ns = ("test", "foo", "bar", "baz", str(r % 2))
        for i in range(n):
            coros += [
                store.aput(ns, f"key{i}", {"foo": f"bar{i}"}),
                store.aget(ns, f"key{i}"),
                store.alist_namespaces(prefix=None, max_depth=r + 1),
                store.asearch(("test",)),
                store.aput(ns, f"key{i}", {"foo": f"bar{i}"}),
                store.adelete(ns, f"key{i}"),
            ]
    t0 = time.perf_counter()
    results = await asyncio.gather(*coros)
    assert len(results) == n * m * 6
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--label", default="after", help="name of this run in the result file")
    parser.add_argument("--skip-async", action="store_true", help="only the listing")
    args = parser.parse_args()
    result: dict[str, Any] = {"label": args.label, "mneme": mneme.__file__, "items": args.items}
    with tempfile.TemporaryDirectory(prefix="mneme-storeops-") as tmp:
        stores: dict[str, BaseStore] = {
            "ChromaStore": ChromaStore.open(f"{tmp}/db"),
            "InMemoryStore": InMemoryStore(),
        }
        for name, store in stores.items():
            t0 = time.perf_counter()
            fill(store, args.items)
            result[name] = {
                "fill_s": round(time.perf_counter() - t0, 1),
                "listing": listing(store, args.runs),
            }
            print(name, result[name], flush=True)
        if not args.skip_async:
            for name, store in {
                "ChromaStore": ChromaStore.open(f"{tmp}/async"),
                "InMemoryStore": InMemoryStore(),
            }.items():
                result[name]["async_60000_calls_s"] = round(asyncio.run(many_calls(store)), 1)
                print(name, "60,000 async calls:", result[name]["async_60000_calls_s"], "s", flush=True)
    path = write_result(f"store_ops_{args.label}", result)
    print("->", path)


if __name__ == "__main__":
    main()
