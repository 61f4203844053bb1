"""One measurement of one system in its own process (started by `benchmarks.run`).

`python -m benchmarks.worker TASK --out FILE [--quick]`, where TASK is `prepare`,
`locomo:NAME`, `scale:GROUP`, `ingest` or `overhead`. A process per task keeps every system's peak
resident memory its own, keeps one system's query-vector cache from helping another, and
lets a peer that crashes or hangs lose only its own row. The network guard is installed
before anything else is imported. Progress goes to stdout as `@@ <fraction>` lines; the
figures go to FILE as JSON.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import offline

offline.install()

from benchmarks.peers.base import TextSystem  # noqa: E402

LOCOMO_SYSTEMS = ("mneme", "mneme-dense", "bm25", "langgraph-inmemory", "langmem", "mem0")
SCALE_GROUPS = {
    "mneme": ("mneme", "mneme-dense"),
    "langgraph-inmemory": ("langgraph-inmemory", "langmem"),
    "mem0": ("mem0",),
    "bm25": ("bm25",),
}
QUICK_CONVERSATIONS = 1
QUICK_QUESTIONS = 60


def progress(fraction: float) -> None:
    """Report how far this task is (0..1) to the parent."""
    print(f"@@ {min(max(fraction, 0.0), 1.0):.4f}", flush=True)


def peak_rss_mb() -> float:
    """The high-water mark of this process's resident memory so far, in MiB."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def dense_context() -> Any:
    """Settings of mneme with lexical retrieval off (None when this build has no such switch)."""
    from dataclasses import fields

    from mneme.context import Context

    if "retrieval_mode" not in {f.name for f in fields(Context)}:
        return None
    return Context(retrieval_mode="dense")  # type: ignore[call-arg]


def make_system(name: str, embeddings: Any, *, scale: bool = False) -> TextSystem:
    """Build a system by its row name, on the shared embeddings."""
    if name in ("mneme", "mneme-dense"):
        from benchmarks.systems import MnemeSystem

        system = MnemeSystem(name, embeddings)
        if name == "mneme-dense":
            ctx = dense_context()
            if ctx is not None:
                system.memory.context = ctx
            system.notes = (
                "mneme with retrieval_mode='dense' (lexical fusion off)"
                if ctx is not None
                else "this build of mneme has no lexical retrieval: identical to mneme"
            )
        else:
            system.notes = "mneme default settings (Memory.add infer=False, Memory.search)"
        return system
    if name == "bm25":
        from benchmarks.peers.bm25 import BM25System

        return BM25System()
    if name == "langgraph-inmemory":
        from benchmarks.peers.langgraph_store import LangGraphStoreSystem

        return LangGraphStoreSystem(embeddings)
    if name == "langmem":
        from benchmarks.peers.langmem_peer import LangMemSystem

        return LangMemSystem(embeddings)
    if name == "mem0":
        from benchmarks.peers.mem0_peer import Mem0System

        return Mem0System(embeddings, in_memory=scale)
    raise SystemExit(f"unknown system {name!r}")


class Counted:
    """Wraps a system to report progress as questions are searched."""

    def __init__(self, system: TextSystem, questions: int) -> None:
        self.system = system
        self.name = system.name
        self.asked = 0
        self.total = questions

    def add(self, conv: Any) -> None:
        self.system.add(conv)

    def search(self, conv: Any, question: str, k: int) -> list[str]:
        out = self.system.search(conv, question, k)
        self.asked += 1
        if self.asked % 10 == 0:
            progress(0.1 + 0.8 * self.asked / self.total)
        return out


def locomo_task(name: str, quick: bool) -> dict[str, Any]:
    from benchmarks.locomo import conversations, evaluate
    from benchmarks.systems import cached_local

    convs = conversations(QUICK_CONVERSATIONS if quick else None)
    if quick:
        for c in convs:
            c.questions = c.questions[:QUICK_QUESTIONS]
    t0 = time.perf_counter()
    system = make_system(name, cached_local())
    progress(0.05)
    result: dict[str, Any] = evaluate(Counted(system, sum(len(c.questions) for c in convs)), convs)  # type: ignore[arg-type]
    result["peak_rss_mb"] = peak_rss_mb()
    result["seconds"] = round(time.perf_counter() - t0, 1)
    result["notes"] = system.notes
    if name == "mneme":
        from benchmarks.token_cost import measure

        store = system.memory.store  # type: ignore[attr-defined]
        result["tokens"] = measure(store, convs, lambda f: progress(0.9 + 0.1 * f))
    system.close()
    return result


def scale_task(group: str, quick: bool) -> dict[str, Any]:
    from benchmarks import scale
    from benchmarks.scale_corpus import CorpusEmbeddings, build
    from benchmarks.systems import cached_local

    sizes = scale.QUICK_SIZES if quick else scale.SIZES
    corpus = build(max(sizes), cached_local())
    embeddings = CorpusEmbeddings(corpus, cached_local())
    system = make_system(SCALE_GROUPS[group][0], embeddings, scale=True)
    variants: dict[str, scale.Search] = {system.name: system.search_user}
    fill: Callable[[list[tuple[str, str]]], None] | None = None
    if group == "mneme":
        from benchmarks.systems import MnemeSystem

        assert isinstance(system, MnemeSystem)
        mneme = system
        dense = dense_context()

        def fill_mneme(items: list[tuple[str, str]]) -> None:
            batch = [{"role": "user", "content": text, "id": key} for key, text in items]
            mneme.memory.add(batch, user_id=scale.USER, infer=False, metadata={}, session_id=scale.USER)

        def search_dense(user: str, query: str, k: int) -> list[str]:
            saved = mneme.memory.context
            mneme.memory.context = dense if dense is not None else saved
            try:
                return mneme.search_user(user, query, k)
            finally:
                mneme.memory.context = saved

        fill = fill_mneme
        variants["mneme-dense"] = search_dense
    elif group == "langgraph-inmemory":
        from benchmarks.peers.langgraph_store import LangGraphStoreSystem
        from benchmarks.peers.langmem_peer import LangMemSystem

        assert isinstance(system, LangGraphStoreSystem)
        variants["langmem"] = LangMemSystem(embeddings, store=system.store).search_user
    elif group == "mem0":
        from benchmarks.peers.mem0_peer import Mem0System

        assert isinstance(system, Mem0System)
        m0 = system

        def fill_mem0(items: list[tuple[str, str]]) -> None:
            m0.bulk_insert(scale.USER, items)

        fill = fill_mem0
    elif group == "bm25":
        from benchmarks.peers.bm25 import BM25System

        assert isinstance(system, BM25System)
        bm25 = system

        def fill_bm25(items: list[tuple[str, str]]) -> None:
            bm25.add_texts(scale.USER, items, reindex=False)  # the timed add re-indexes everything

        fill = fill_bm25
    probe = 200 if group == "mem0" else 500
    out = scale.run(system, variants, corpus, sizes, fill=fill, probe=probe, progress=progress)
    system.close()
    return {
        "variants": out,
        "probe_adds": probe,
        "notes": system.notes,
        "corpus_real_texts": corpus.real,
        "embedding_misses": embeddings.misses,
    }


def prepare_task() -> dict[str, Any]:
    """Fill the benchmark's embedding cache with every LoCoMo turn (seconds when it is warm).

    On a fresh machine this embeds 5,882 turns once (several minutes), here, before any system
    is timed, so that no system's add rate includes embedding work the others are spared.
    """
    from benchmarks.locomo import conversations
    from benchmarks.peers.base import turn_items
    from benchmarks.systems import cached_local

    texts = [text for c in conversations() for _, text in turn_items(c)]
    embeddings = cached_local()
    for i in range(0, len(texts), 200):
        embeddings.embed_documents(texts[i : i + 200])
        progress((i + 200) / len(texts))
    return {"turns": len(texts)}


def ingest_task(quick: bool) -> dict[str, Any]:
    from benchmarks import ingest
    from benchmarks.locomo import conversations

    convs = conversations()
    out: dict[str, Any] = {"gate": ingest.gate_share(convs)}
    progress(0.1)
    out["infer_false"] = ingest.verbatim_rate(convs[:1] if quick else convs[:2])
    progress(0.5)
    out["infer_true"] = ingest.inferred_rate(convs, 100 if quick else 600, lambda f: progress(0.5 + 0.5 * f))
    return out


def overhead_task(quick: bool) -> dict[str, Any]:
    from benchmarks.turn_overhead import run

    turns, memories = (30, 300) if quick else (100, 1000)
    progress(0.05)
    result: dict[str, Any] = run(turns=turns, memories=memories)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("task")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    kind, _, name = args.task.partition(":")
    t0 = time.perf_counter()
    try:
        if kind == "prepare":
            result = prepare_task()
        elif kind == "locomo":
            result = locomo_task(name, args.quick)
        elif kind == "scale":
            result = scale_task(name, args.quick)
        elif kind == "ingest":
            result = ingest_task(args.quick)
        elif kind == "overhead":
            result = overhead_task(args.quick)
        else:
            raise SystemExit(f"unknown task {args.task!r}")
    except Exception as exc:  # the row says why, and the run goes on
        traceback.print_exc()
        result = {"skipped": f"{type(exc).__name__}: {exc}"}
    result["network_attempts"] = offline.attempts()
    result["task_seconds"] = round(time.perf_counter() - t0, 1)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False))
    progress(1.0)
    sys.exit(0)


if __name__ == "__main__":
    main()
